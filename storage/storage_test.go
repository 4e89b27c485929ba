package storage

import (
	"strings"
	"testing"
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
	if err := c.Validate(); err != nil || !c.Azure() {
		t.Fatalf("env connection string not applied: %v %+v", err, c)
	}
	if !strings.Contains(c.Describe(), "127.0.0.1:10000") {
		t.Fatalf("Describe = %q", c.Describe())
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
