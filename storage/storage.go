// Package storage holds the settings that choose where data lives (the
// embedded data directory, or an Azure Storage account) and builds the Azure
// clients once, for the blob and table sinks to share.
//
// Connection strings with an account key or a SAS work as the Azure SDK
// parses them; "UseDevelopmentStorage=true" means Azurite on its default
// loopback ports; --storage-account NAME uses Microsoft Entra ID through
// azidentity's DefaultAzureCredential (managed identity, workload identity,
// Azure CLI), for companies that ban shared keys.
package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/spf13/pflag"
)

// Config chooses the backend.
type Config struct {
	DataDir string // embedded backend root
	// ConnString is the Azure connection string. Empty, it is taken from
	// $AZURE_STORAGE_CONNECTION_STRING unless Account is set; empty there
	// too, the embedded backend is used.
	ConnString string
	Account    string // Azure account name for Entra ID auth
	Container  string // blob container for logs
	// BlobEndpoint and TableEndpoint override the service URLs derived from
	// Account (sovereign clouds, private endpoints, an emulator).
	BlobEndpoint, TableEndpoint string
	// TryTimeout bounds one storage request; a hung request is abandoned
	// after it and retried by the sinks with backoff.
	TryTimeout time.Duration
}

// DefaultConfig returns the settings the flags default to: the embedded
// backend under ./data.
func DefaultConfig() Config {
	return Config{DataDir: "./data", Container: "logs", TryTimeout: 15 * time.Second}
}

// RegisterFlags adds the storage flags to fs, with c's values as their
// defaults (start from DefaultConfig).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the embedded backend (blobs, tables) and the write-ahead log")
	fs.StringVar(&c.ConnString, "storage", c.ConnString, "Azure Storage connection string (or env "+ConnStringEnv+"); \"UseDevelopmentStorage=true\" means Azurite on loopback; empty = embedded backend")
	fs.StringVar(&c.Account, "storage-account", c.Account, "Azure Storage account name, authenticated with Microsoft Entra ID (DefaultAzureCredential) instead of a connection string")
	fs.StringVar(&c.BlobEndpoint, "storage-blob-endpoint", c.BlobEndpoint, "with --storage-account: the Blob service URL (default https://NAME.blob.core.windows.net/), for sovereign clouds, private endpoints or an emulator")
	fs.StringVar(&c.TableEndpoint, "storage-table-endpoint", c.TableEndpoint, "with --storage-account: the Table service URL (default https://NAME.table.core.windows.net/)")
	fs.StringVar(&c.Container, "container", c.Container, "blob container for log blobs")
	fs.DurationVar(&c.TryTimeout, "storage-try-timeout", c.TryTimeout, "time allowed for one Azure Storage request before it is abandoned and retried")
}

// ConnStringEnv is the environment variable a connection string is taken
// from when neither --storage nor --storage-account is given.
const ConnStringEnv = "AZURE_STORAGE_CONNECTION_STRING"

// connString is the connection string in use: ConnString, else the
// environment's when no account is named. Reading it where it is used
// keeps the Config a plain value: nothing fills it in after the flags are
// parsed, so one Validate, at any point, sees what will be used.
func (c *Config) connString() string {
	if c.ConnString == "" && c.Account == "" {
		return os.Getenv(ConnStringEnv)
	}
	return c.ConnString
}

// Validate checks the settings. It changes nothing.
func (c *Config) Validate() error {
	if c.ConnString != "" && c.Account != "" {
		return errors.New("cannot use both --storage and --storage-account: pick one way to reach Azure")
	}
	if c.Account == "" && (c.BlobEndpoint != "" || c.TableEndpoint != "") {
		return errors.New("cannot use --storage-blob-endpoint or --storage-table-endpoint without --storage-account (a connection string names its own endpoints)")
	}
	for _, ep := range []string{c.BlobEndpoint, c.TableEndpoint} {
		if ep != "" && !strings.HasPrefix(ep, "https://") {
			return fmt.Errorf("cannot use endpoint %q: Entra ID tokens are sent over https only", ep)
		}
	}
	if c.Container == "" {
		return errors.New("cannot use an empty --container")
	}
	if c.DataDir == "" {
		return errors.New("cannot use an empty --data-dir")
	}
	return nil
}

// Azure reports whether the Azure backend is selected.
func (c *Config) Azure() bool { return c.connString() != "" || c.Account != "" }

// Describe names the backend for logs, without secrets.
func (c *Config) Describe() string {
	switch {
	case c.Account != "":
		return "azure account " + c.Account + " (Entra ID)"
	case c.connString() != "":
		conn := c.connString()
		if ep := connValue(ExpandConnString(conn), "BlobEndpoint"); ep != "" {
			return "azure " + ep
		}
		return "azure account " + connValue(conn, "AccountName")
	}
	abs, _ := filepath.Abs(c.DataDir)
	return "embedded " + abs
}

// DevConnString is what "UseDevelopmentStorage=true" stands for: Azurite's
// well-known account on its default loopback ports.
const DevConnString = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"

// ExpandConnString replaces "UseDevelopmentStorage=true", which neither SDK
// parses, by the equivalent explicit connection string.
func ExpandConnString(s string) string {
	if strings.EqualFold(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ";")), "UseDevelopmentStorage=true") {
		return DevConnString
	}
	return s
}

func connValue(s, key string) string {
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), key) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// clientOptions keeps the SDK's own retries short: the sinks retry with
// their own backoff, logged and counted, and keep data in the WAL meanwhile.
func (c *Config) clientOptions() azcore.ClientOptions {
	try := c.TryTimeout
	if try <= 0 {
		try = 15 * time.Second
	}
	return azcore.ClientOptions{
		Retry: policy.RetryOptions{
			MaxRetries:    2,
			TryTimeout:    try,
			RetryDelay:    200 * time.Millisecond,
			MaxRetryDelay: 2 * time.Second,
		},
	}
}

// BlobClient builds the Blob service client.
func (c *Config) BlobClient() (*azblob.Client, error) {
	opts := &azblob.ClientOptions{ClientOptions: c.clientOptions()}
	return newClient(c, "blobs", c.endpoint(c.BlobEndpoint, "blob"),
		func(conn string) (*azblob.Client, error) { return azblob.NewClientFromConnectionString(conn, opts) },
		func(url string, cred azcore.TokenCredential) (*azblob.Client, error) {
			return azblob.NewClient(url, cred, opts)
		})
}

// TableClient builds the Table service client.
func (c *Config) TableClient() (*aztables.ServiceClient, error) {
	opts := &aztables.ClientOptions{ClientOptions: c.clientOptions()}
	return newClient(c, "tables", c.endpoint(c.TableEndpoint, "table"),
		func(conn string) (*aztables.ServiceClient, error) {
			return aztables.NewServiceClientFromConnectionString(conn, opts)
		},
		func(url string, cred azcore.TokenCredential) (*aztables.ServiceClient, error) {
			return aztables.NewServiceClient(url, cred, opts)
		})
}

// newClient builds one service's client: from the connection string, or
// with --storage-account from the Entra ID credential (managed identity,
// workload identity or the Azure CLI, whichever answers) and the service
// URL.
func newClient[C any](c *Config, what, url string, fromConnString func(string) (C, error), fromCredential func(string, azcore.TokenCredential) (C, error)) (C, error) {
	var zero C
	if c.Account == "" {
		cl, err := fromConnString(ExpandConnString(c.connString()))
		if err != nil {
			return zero, fmt.Errorf("cannot use the --storage connection string for %s: %w", what, err)
		}
		return cl, nil
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return zero, fmt.Errorf("cannot get an Entra ID credential for account %s: %w", c.Account, err)
	}
	return fromCredential(url, cred)
}

// endpoint is the service URL for Entra ID auth: the override, else the
// account's public endpoint.
func (c *Config) endpoint(override, service string) string {
	if override != "" {
		return override
	}
	return fmt.Sprintf("https://%s.%s.core.windows.net/", c.Account, service)
}

// BlobDir is where the embedded backend keeps the container's blobs.
func (c *Config) BlobDir() string { return filepath.Join(c.DataDir, "blobs", c.Container) }

// TableFile is the embedded table store's database file.
func (c *Config) TableFile() string { return filepath.Join(c.DataDir, "tables.db") }

// WALDir is where the write-ahead log lives (always local, whatever the backend).
func (c *Config) WALDir() string { return filepath.Join(c.DataDir, "wal") }
