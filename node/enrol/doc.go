// Package enrol puts this device into a vault while no agent runs: it
// creates a vault (InitVault), joins one with an invite code (JoinVault,
// RequestJoin: the joining side of /weft/pair/1), recovers one with the
// recovery phrase (RecoverVault, RequestRecovery: the recovering side of
// /weft/recover/1) and changes a vault's relays offline (ChangeRelays).
//
// Each writes the vault's secrets and membership to the home before the
// vault becomes visible (home.AddVaultPrepared), so a crash part-way
// leaves nothing half made; the next `weft up` syncs the folder. The
// answering sides of both streams run in the agent (package node), which
// this package does not import: it talks to the agent only over the
// network, as a device elsewhere would.
package enrol
