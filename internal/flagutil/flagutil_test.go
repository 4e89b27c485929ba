package flagutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestIntBytesVar(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var a, b int
	IntBytesVar(fs, &a, "sort-bytes", 16<<20, "")
	IntBytesVar(fs, &b, "line-bytes", 4<<20, "")
	if a != 16<<20 || fs.Lookup("sort-bytes").DefValue != "16MiB" {
		t.Fatalf("default %d shown as %q", a, fs.Lookup("sort-bytes").DefValue)
	}
	if err := fs.Parse([]string{"--sort-bytes", "32MiB", "--line-bytes", "1048576"}); err != nil {
		t.Fatal(err)
	}
	if a != 32<<20 || b != 1<<20 {
		t.Fatalf("got %d and %d: want a size and a bare integer both accepted", a, b)
	}
	if err := fs.Set("line-bytes", "lots"); err == nil {
		t.Fatal("a bad size was accepted")
	}
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

// TestPrecedence: command line > INGEST_<FLAG> > --config file > default.
func TestPrecedence(t *testing.T) {
	file := "listen: \":9000\"\nbuffer-bytes: 1GiB\nflush-interval: 5s\npprof: true\ncolor: red\n"
	f := func(args []string, env map[string]string, wantListen string, wantBytes int64, wantInterval time.Duration) {
		t.Helper()
		t.Run("", func(t *testing.T) { precedenceCase(t, file, args, env, wantListen, wantBytes, wantInterval) })
	}
	f(nil, nil, ":9000", 1<<30, 5*time.Second)
	f(nil, map[string]string{"INGEST_LISTEN": ":7000"}, ":7000", 1<<30, 5*time.Second)
	f([]string{"--listen", ":6000"}, map[string]string{"INGEST_LISTEN": ":7000"}, ":6000", 1<<30, 5*time.Second)
	f([]string{"--buffer-bytes", "4MiB"}, map[string]string{"INGEST_FLUSH_INTERVAL": "1s"}, ":9000", 4<<20, time.Second)
}

func precedenceCase(t *testing.T, file string, args []string, env map[string]string, wantListen string, wantBytes int64, wantInterval time.Duration) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	listen := fs.String("listen", ":8080", "")
	var size int64
	BytesVar(fs, &size, "buffer-bytes", 256<<20, "")
	interval := fs.Duration("flush-interval", 2*time.Second, "")
	pprof := fs.Bool("pprof", false, "")
	for k, v := range env {
		t.Setenv(k, v)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	known := func(name string) bool { return name == "color" } // another command's flag
	if err := applyYAML(fs, []byte(file), "test.yaml", known); err != nil {
		t.Fatal(err)
	}
	if *listen != wantListen || size != wantBytes || *interval != wantInterval || !*pprof {
		t.Fatalf("args %q env %v: listen %q bytes %d interval %v pprof %v; want %q %d %v true",
			args, env, *listen, size, *interval, *pprof, wantListen, wantBytes, wantInterval)
	}
}

func TestApplyFileErrors(t *testing.T) {
	f := func(file, wantErr string) {
		t.Helper()
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.String("listen", ":8080", "")
		fs.Int("partitions", 256, "")
		fs.String("config", "", "")
		err := applyYAML(fs, []byte(file), "test.yaml", func(name string) bool { return name == "days" })
		if wantErr == "" {
			if err != nil {
				t.Fatalf("%q: %v", file, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("%q: error %v, want it to contain %q", file, err, wantErr)
		}
	}
	f("", "")
	f("# only a comment\n", "")
	f("days: 3\n", "") // another command's flag
	f("listen: \":1\"\nlisen: x\n", `line 2: unknown key "lisen"`)
	f("listen_addr: x\n", `unknown key "listen_addr"`)
	f("config: other.yaml\n", `unknown key "config"`)
	f("partitions: lots\n", `line 1: key "partitions": cannot use "lots"`)
	f("listen:\n", `key "listen": want a value`)
	f("listen: {a: 1}\n", "not a mapping")
	f("- listen\n", "want a mapping of flag names")
	f("listen: [a, b]\n", "")
	f("listen: a\nlisten: b\n", `line 2: key "listen" appears twice`)
	f("listen: \"unterminated\n", "cannot parse")
}

func FuzzApplyFile(f *testing.F) {
	f.Add([]byte("listen: \":9000\"\npartitions: 16\n"))
	f.Add([]byte("listen: [a, b]\nx: &a 1\ny: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.String("listen", ":8080", "")
		fs.Int("partitions", 256, "")
		applyYAML(fs, data, "fuzz.yaml", nil) // must not panic
	})
}

func TestApplyFileReadsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ingest.yaml")
	os.WriteFile(path, []byte("listen: \":9000\"\n"), 0o600)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	listen := fs.String("listen", ":8080", "")
	if err := ApplyFile(fs, path, nil); err != nil || *listen != ":9000" {
		t.Fatalf("ApplyFile: %v, listen %q", err, *listen)
	}
	if err := ApplyFile(fs, path+".missing", nil); err == nil || !strings.Contains(err.Error(), "cannot read the --config file") {
		t.Fatalf("missing file: %v", err)
	}
}
