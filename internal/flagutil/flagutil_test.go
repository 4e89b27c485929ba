package flagutil

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestParseBytes(t *testing.T) {
	f := func(in string, want int64, wantErr bool) {
		t.Helper()
		got, err := ParseBytes(in)
		if (err != nil) != wantErr || got != want {
			t.Fatalf("ParseBytes(%q) = %d, %v; want %d, err=%v", in, got, err, want, wantErr)
		}
	}
	f("4MiB", 4<<20, false)
	f("256mib", 256<<20, false)
	f("1.5GiB", 3<<29, false)
	f("512KB", 512000, false)
	f("4096", 4096, false)
	f("10M", 10<<20, false)
	f("", 0, true)
	f("-1MiB", 0, true)
	f("lots", 0, true)
}

func TestApplyEnv(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var size int64
	var listen, other string
	BytesVar(fs, &size, "flush-bytes", 1, "")
	fs.StringVar(&listen, "listen", ":8080", "")
	fs.StringVar(&other, "data-dir", "d", "")
	t.Setenv("INGEST_FLUSH_BYTES", "2MiB")
	t.Setenv("INGEST_LISTEN", ":9")
	t.Setenv("INGEST_DATA_DIR", "from-env")
	if err := fs.Parse([]string{"--data-dir", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if size != 2<<20 || listen != ":9" || other != "from-flag" {
		t.Fatalf("got size=%d listen=%q data-dir=%q: env must fill unset flags only", size, listen, other)
	}
	t.Setenv("INGEST_FLUSH_BYTES", "huge")
	fs2 := pflag.NewFlagSet("y", pflag.ContinueOnError)
	BytesVar(fs2, &size, "flush-bytes", 1, "")
	if err := ApplyEnv(fs2); err == nil {
		t.Fatal("a bad env value was accepted")
	}
}
