// Package flagutil holds the command line's small shared pieces: byte-size
// flag values ("4MiB", "256MiB", "1GB", "4096"), and reading every flag from
// an INGEST_<FLAG> environment variable (ApplyEnv) and from a YAML file whose
// keys are the flag names (ApplyFile). Apply the command line first, then
// ApplyEnv, then ApplyFile: each sets only the flags still unset, so the
// command line wins over the environment, which wins over the file.
package flagutil

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Bytes is a byte count that parses and prints human sizes.
type Bytes int64

var units = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseBytes parses "4MiB", "1.5GiB", "512KB", "4096".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("cannot parse size %q: want a number with an optional unit such as 4MiB or 1GB", s)
	}
	return int64(f * float64(mult)), nil
}

// formatBytes prints n with the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *Bytes) String() string { return formatBytes(int64(*b)) }
func (b *Bytes) Type() string   { return "size" }
func (b *Bytes) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}

// BytesVar defines a size flag.
func BytesVar(fs *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var((*Bytes)(p), name, usage)
}

// intBytes is Bytes for an int setting.
type intBytes int

func (b *intBytes) String() string { return formatBytes(int64(*b)) }
func (b *intBytes) Type() string   { return "size" }
func (b *intBytes) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt {
		return fmt.Errorf("cannot use size %q: larger than %d bytes", s, math.MaxInt)
	}
	*b = intBytes(n)
	return nil
}

// IntBytesVar defines a size flag for an int setting.
func IntBytesVar(fs *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var((*intBytes)(p), name, usage)
}

// EnvName is the environment variable that sets a flag: INGEST_<FLAG>, upper
// case, '-' replaced by '_'.
func EnvName(flag string) string {
	return "INGEST_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ApplyEnv sets every flag not given on the command line from its
// environment variable, if present.
func ApplyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("cannot use %s=%q: %w", EnvName(f.Name), v, e)
			}
		}
	})
	return err
}

// ApplyFile sets every flag still unset from the YAML file at path: a
// mapping of flag names to values (`listen: ":9000"`, `buffer-bytes: 1GiB`,
// `pprof: true`; a list sets a flag to its items joined by commas). One file
// may serve every command: a key that is not a flag of fs but for which
// known is true (a flag of another command) is skipped; any other key is an
// error that names it.
func ApplyFile(fs *pflag.FlagSet, path string, known func(name string) bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read the --config file: %w", err)
	}
	return applyYAML(fs, data, path, known)
}

func applyYAML(fs *pflag.FlagSet, data []byte, name string, known func(string) bool) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("cannot parse the --config file %s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("cannot use the --config file %s: want a mapping of flag names to values (listen: \":9000\"), line %d is not one", name, root.Line)
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("line %d: a key must be a flag name", k.Line))
			continue
		}
		if seen[k.Value] {
			errs = append(errs, fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value))
			continue
		}
		seen[k.Value] = true
		f := fs.Lookup(k.Value)
		if f == nil || k.Value == "config" {
			if known != nil && known(k.Value) && k.Value != "config" {
				continue // another command's flag
			}
			errs = append(errs, fmt.Errorf("line %d: unknown key %q: no command has a --%s flag", k.Line, k.Value, k.Value))
			continue
		}
		if f.Changed {
			continue // set on the command line or by INGEST_*
		}
		val, err := scalarValue(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: key %q: %w", v.Line, k.Value, err))
			continue
		}
		if err := fs.Set(k.Value, val); err != nil {
			errs = append(errs, fmt.Errorf("line %d: key %q: cannot use %q: %w", v.Line, k.Value, val, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot use the --config file %s:\n%w", name, err)
	}
	return nil
}

// scalarValue is a value as a flag takes it: a scalar as written, a list
// of scalars joined by commas.
func scalarValue(v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "", errors.New("want a value, got none")
		}
		return v.Value, nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				return "", errors.New("want a list of plain values")
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	case yaml.AliasNode:
		return scalarValue(v.Alias)
	}
	return "", errors.New("want a plain value (a string, number, size, duration or bool), not a mapping")
}
