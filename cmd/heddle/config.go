package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

const defaultEndpoint = "http://127.0.0.1:7070"

// fileConfig is the CLI's config file (YAML).
type fileConfig struct {
	Endpoint string `json:"endpoint,omitempty"`
	Key      string `json:"key,omitempty"`
	// Login holds the tokens of `heddle login` (login.go).
	Login *loginTokens `json:"login,omitempty"`
}

// configPath is $HEDDLE_CONFIG or ~/.config/heddle/config.yaml.
func configPath() (string, error) {
	if p := os.Getenv("HEDDLE_CONFIG"); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the config file (set HEDDLE_CONFIG): %w", err)
	}
	return filepath.Join(home, ".config", "heddle", "config.yaml"), nil
}

// readConfig reads the config file; a missing file is an empty config.
func readConfig(path string) (fileConfig, error) {
	var fc fileConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fc, nil
	}
	if err != nil {
		return fc, err
	}
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return fc, fmt.Errorf("config file %s: %w (it holds `endpoint`, `key` and `heddle login`'s `login`)", path, err)
	}
	return fc, nil
}

// writeConfig writes fc to path with mode 0600 (the file holds an API key),
// replacing the old file in one rename.
func writeConfig(path string, fc fileConfig) error {
	data, err := yaml.Marshal(fc)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// settings are the endpoint and key a command uses, and where each came from.
type settings struct {
	Endpoint, EndpointFrom string
	Key, KeyFrom           string
	ConfigPath             string
	// Login is set when Key is the ID token of `heddle login`.
	Login *loginTokens
}

// resolveSettings applies flags > environment > config file > default.
func (a *app) resolveSettings(cmd *cobra.Command) (settings, error) {
	s := settings{}
	path, err := configPath()
	if err != nil {
		return s, err
	}
	s.ConfigPath = path
	fc, err := readConfig(path)
	if err != nil {
		return s, err
	}
	pick := func(flag, env, file string) (string, string) {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
			return f.Value.String(), "--" + flag + " flag"
		}
		if v := os.Getenv(env); v != "" {
			return v, env
		}
		if file != "" {
			return file, path
		}
		return "", ""
	}
	s.Endpoint, s.EndpointFrom = pick("endpoint", "HEDDLE_ENDPOINT", fc.Endpoint)
	if s.Endpoint == "" {
		s.Endpoint, s.EndpointFrom = defaultEndpoint, "default"
	}
	s.Key, s.KeyFrom = pick("key", "HEDDLE_KEY", fc.Key)
	// A sign-in (heddle login) comes after --key and HEDDLE_KEY and before
	// the file's key: signing in is the newer, deliberate choice.
	if fc.Login != nil && fc.Login.IDToken != "" && (s.KeyFrom == "" || s.KeyFrom == path) {
		s.Key, s.KeyFrom, s.Login = fc.Login.IDToken, path+" (heddle login)", fc.Login
	}
	return s, nil
}

// client returns an API client with the resolved endpoint and key.
func (a *app) client(cmd *cobra.Command) (*Client, error) {
	s, err := a.resolveSettings(cmd)
	if err != nil {
		return nil, err
	}
	if s.Key == "" {
		return nil, errors.New("no API key: pass --key, set HEDDLE_KEY, run `heddle config set key hdl_...`, or sign in with `heddle login`")
	}
	if s.Login != nil {
		if s.Key, err = a.freshIDToken(cmd, s); err != nil {
			return nil, err
		}
	}
	c := NewClient(s.Endpoint, s.Key)
	if a.httpClient != nil {
		c.HTTP = a.httpClient
	}
	c.Pause = retryNotice{w: cmd.ErrOrStderr(), tty: isTerminal(cmd.ErrOrStderr()), tick: time.Second}.pause
	return c, nil
}

// call sends one request, with body as JSON when it is not nil, and prints
// the answer as printAnswer does.
func call[T any](a *app, cmd *cobra.Command, method, path string, body any, print func(io.Writer, *T)) error {
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	raw, err := c.JSON(cmd.Context(), method, path, nil, body)
	if err != nil {
		return err
	}
	return printAnswer(a, cmd.OutOrStdout(), raw, print)
}

func newConfigCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or set the CLI's endpoint and API key",
		Long: `The CLI finds the API's endpoint and key in, first to last: the --endpoint and
--key flags, HEDDLE_ENDPOINT and HEDDLE_KEY, and the config file
($HEDDLE_CONFIG, or ~/.config/heddle/config.yaml) with keys endpoint and key.
The endpoint defaults to ` + defaultEndpoint + `.`,
	}
	set := &cobra.Command{
		Use:   "set endpoint|key VALUE",
		Short: "Write endpoint or key to the config file (mode 0600); a key of - is read from stdin",
		Example: `  heddle config set endpoint https://heddle.example.com
  heddle config set key hdl_...
  printf %s "$KEY" | heddle config set key -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[0] != "endpoint" && args[0] != "key") {
				return errors.New("usage: heddle config set endpoint|key VALUE")
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"endpoint", "key"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := configPath()
			if err != nil {
				return err
			}
			fc, err := readConfig(path)
			if err != nil {
				return err
			}
			value := args[1]
			if value == "-" {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return fmt.Errorf("reading the %s from stdin: %w", args[0], err)
				}
				value = strings.TrimSpace(line)
			}
			if value == "" {
				return fmt.Errorf("the %s is empty", args[0])
			}
			switch args[0] {
			case "endpoint":
				fc.Endpoint = value
			case "key":
				fc.Key = value
			}
			if err := writeConfig(path, fc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s to %s\n", args[0], path)
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the endpoint and key the CLI would use, and where each comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.resolveSettings(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "config file  %s\n", s.ConfigPath)
			fmt.Fprintf(out, "endpoint     %s (from %s)\n", s.Endpoint, s.EndpointFrom)
			if s.Key == "" {
				fmt.Fprintf(out, "key          (none)\n")
			} else {
				fmt.Fprintf(out, "key          %s (from %s)\n", maskKey(s.Key), s.KeyFrom)
			}
			return nil
		},
	}
	cmd.AddCommand(set, show)
	return cmd
}

// maskKey shows only the start of a key.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:8] + "****"
}
