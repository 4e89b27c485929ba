// Package configtest checks, in a package's tests, the one configuration
// style of the project: a Config's flags default to DefaultConfig's values,
// DefaultConfig is valid, and Validate only checks (it never changes the
// Config it is given).
package configtest

import (
	"testing"

	"github.com/spf13/pflag"
)

// Config is a package's configuration: a struct C whose pointer registers
// its flags and validates it.
type Config[C any] interface {
	*C
	RegisterFlags(fs *pflag.FlagSet)
	Validate() error
}

// FlagsDefault fails t unless the flags of a DefaultConfig (def), parsed
// from no arguments, leave it equal to def() and valid. It returns that
// Config and its flag set, for a test to parse arguments of its own.
func FlagsDefault[C comparable, P Config[C]](t *testing.T, def func() C) (*C, *pflag.FlagSet) {
	t.Helper()
	c := def()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	P(&c).RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c != def() {
		t.Fatalf("flags without arguments give %+v, want DefaultConfig %+v", c, def())
	}
	if err := P(&c).Validate(); err != nil {
		t.Fatalf("DefaultConfig is not valid: %v", err)
	}
	return &c, fs
}

// Validate fails t unless c.Validate() returns an error exactly when
// wantErr, and leaves c as it was.
func Validate[C comparable, P Config[C]](t *testing.T, c C, wantErr bool) {
	t.Helper()
	before := c
	err := P(&c).Validate()
	if (err != nil) != wantErr {
		t.Fatalf("Validate(%+v) = %v, want error %v", before, err, wantErr)
	}
	if c != before {
		t.Fatalf("Validate changed the config: %+v, was %+v", c, before)
	}
}
