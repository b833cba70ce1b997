package service

// Default is the installer for this system: systemd user units.
func Default() (Installer, error) {
	dir, err := SystemdUserDir()
	if err != nil {
		return nil, err
	}
	return Systemd{Dir: dir}, nil
}
