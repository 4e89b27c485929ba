package storage

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestExpandConnString(t *testing.T) {
	for _, in := range []string{"UseDevelopmentStorage=true", "usedevelopmentstorage=true;", " UseDevelopmentStorage=true "} {
		if got := ExpandConnString(in); got != DevConnString {
			t.Errorf("ExpandConnString(%q) = %q", in, got)
		}
	}
	if got := ExpandConnString("AccountName=a;AccountKey=b"); got != "AccountName=a;AccountKey=b" {
		t.Errorf("ExpandConnString changed a real connection string: %q", got)
	}
}

func TestValidate(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
	c := Config{DataDir: "d", Container: "logs"}
	if err := c.Validate(); err != nil || !c.Azure() || c.ConnString != "" {
		t.Fatalf("env connection string not used, or written into the settings: %v %+v", err, c)
	}
	if !strings.Contains(c.Describe(), "127.0.0.1:10000") {
		t.Fatalf("Describe = %q", c.Describe())
	}
	c = Config{DataDir: "d", Container: "logs", Account: "acct"}
	if err := c.Validate(); err != nil || c.connString() != "" || !strings.Contains(c.Describe(), "Entra ID") {
		t.Fatalf("env connection string used beside --storage-account: %v %q", err, c.Describe())
	}
	c = Config{DataDir: "d", Container: "logs", ConnString: "x", Account: "y"}
	if err := c.Validate(); err == nil {
		t.Fatal("both --storage and --storage-account accepted")
	}
	if _, err := (&Config{ConnString: "UseDevelopmentStorage=true"}).BlobClient(); err != nil {
		t.Fatalf("BlobClient: %v", err)
	}
	if _, err := (&Config{ConnString: "UseDevelopmentStorage=true"}).TableClient(); err != nil {
		t.Fatalf("TableClient: %v", err)
	}
}

func TestEndpointOverrides(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Account: "acct", BlobEndpoint: "https://acct.blob.core.chinacloudapi.cn/", TableEndpoint: "https://acct.table.core.chinacloudapi.cn/"}, true},
		{Config{Account: "acct"}, true},
		{Config{ConnString: "UseDevelopmentStorage=true", BlobEndpoint: "https://x/"}, false}, // a connection string names its endpoints
		{Config{BlobEndpoint: "https://x/"}, false},                                           // no account
		{Config{Account: "acct", TableEndpoint: "http://127.0.0.1:10002/acct"}, false},        // tokens over http
	} {
		tc.cfg.DataDir, tc.cfg.Container = "d", "logs"
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
	c := Config{Account: "acct"}
	if got := c.endpoint("", "blob"); got != "https://acct.blob.core.windows.net/" {
		t.Errorf("default blob endpoint = %q", got)
	}
	if got := c.endpoint("https://10.0.0.4/acct", "table"); got != "https://10.0.0.4/acct" {
		t.Errorf("overridden endpoint = %q", got)
	}
}

func TestConfigFlagsDefault(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c := DefaultConfig()
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--storage-account", "acct"}); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Account = "acct"
	if c != want {
		t.Fatalf("parsed %+v, want %+v", c, want)
	}
}
