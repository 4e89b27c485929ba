// Package flagutil holds the command line's small shared pieces: byte-size
// flag values ("4MiB", "256MiB", "1GB", "4096") and reading every flag from
// an INGEST_<FLAG> environment variable.
package flagutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
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

// FormatBytes prints n with the largest binary unit that divides it.
func FormatBytes(n int64) string {
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

func (b *Bytes) String() string { return FormatBytes(int64(*b)) }
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
