package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// adminFlags say how to reach a running relay's operator routes: its
// metrics address and, when the relay requires one, the bearer token.
type adminFlags struct {
	metrics   string
	tokenFile string
}

func (f *adminFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.metrics, "metrics", "", "ask the running relay at this metrics address (its --metrics), e.g. 127.0.0.1:9100")
	fs.StringVar(&f.tokenFile, "metrics-token-file", "", "file holding the bearer token the relay's metrics address requires (its --metrics-token-file)")
}

// readToken reads a bearer token from file, which only its owner may
// read; empty file name, empty token.
func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("metrics token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("metrics token file %s can be read by others (mode %v): chmod 600 it", file, fi.Mode().Perm())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("metrics token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("metrics token file %s: want one token of at least one character, no spaces", file)
	}
	return tok, nil
}

// ask sends method path to the relay's metrics address and returns the
// answer's status and body (at most 16 MiB). ctx bounds it.
func (f *adminFlags) ask(ctx context.Context, method, path string) (int, []byte, error) {
	tok, err := readToken(f.tokenFile)
	if err != nil {
		return 0, nil, exitUsage{err}
	}
	base := f.metrics
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		return 0, nil, exitUsage{fmt.Errorf("--metrics %q: %w", f.metrics, err)}
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("asking the relay at %s (is it running with --metrics %s?): %w", f.metrics, f.metrics, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the relay's answer: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return resp.StatusCode, body, fmt.Errorf("the relay at %s wants its bearer token: pass --metrics-token-file", f.metrics)
	}
	return resp.StatusCode, body, nil
}
