package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
)

// TestManagedIdentity runs the server with --storage-account (Microsoft
// Entra ID through DefaultAzureCredential) against Azurite in its OAuth mode
// over HTTPS. The token comes from a managed identity endpoint this test
// serves (the App Service / Functions protocol: IDENTITY_ENDPOINT and
// IDENTITY_HEADER), the way Azure hands tokens to a process. Azurite checks
// each bearer token's issuer, audience and lifetime, not its signature: this
// proves the credential chain, the token request and the bearer
// authentication of both services, not Entra ID itself.
func TestManagedIdentity(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSignedCert(t, dir)
	az, err := azurite.Start("--oauth", "basic", "--cert", certFile, "--key", keyFile)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Azurite is required under CI: %v", err)
		}
		t.Skipf("Azurite not available: %v", err)
	}
	defer az.Stop()

	const identityHeader = "test-identity-secret"
	audience := "https://storage.azure.com"
	var requests atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-IDENTITY-HEADER") != identityHeader {
			http.Error(w, "missing X-IDENTITY-HEADER", http.StatusUnauthorized)
			return
		}
		if res := r.URL.Query().Get("resource"); res != "https://storage.azure.com" {
			http.Error(w, "unexpected resource "+res, http.StatusBadRequest)
			return
		}
		requests.Add(1)
		exp := time.Now().Add(time.Hour).Unix()
		json.NewEncoder(w).Encode(map[string]string{
			"access_token": testJWT(audience, exp), "expires_on": strconv.FormatInt(exp, 10),
			"resource": "https://storage.azure.com", "token_type": "Bearer",
		})
	}))
	defer tokens.Close()

	account := azurite.AccountName
	args := []string{"--storage-account", account,
		"--storage-blob-endpoint", fmt.Sprintf("https://127.0.0.1:%d/%s", az.BlobPort, account),
		"--storage-table-endpoint", fmt.Sprintf("https://127.0.0.1:%d/%s", az.TablePort, account),
		"--container", "identity"}
	// The identity endpoint and the emulator's certificate, for ingest and
	// the commands it runs; every other credential source is left unset.
	for k, v := range map[string]string{"IDENTITY_ENDPOINT": tokens.URL, "IDENTITY_HEADER": identityHeader, "SSL_CERT_FILE": certFile} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}

	s := start(t, filepath.Join(dir, "data"), append(args, "--flush-interval", "100ms")...)
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", []byte(`{"ts":"2026-11-21T18:04:05Z","service":"idsvc","level":"warn","msg":"stored with a token"}`)); code != 202 {
		t.Fatalf("POST /v1/logs = %d %s", code, body)
	}
	if code, body := s.post("/v1/logins", "application/x-ndjson", "", []byte(`{"user":"mi-user","success":true}`)); code != 202 {
		t.Fatalf("POST /v1/logins = %d %s", code, body)
	}
	s.waitDrained()
	if got := s.getLines("/v1/logs?service=idsvc&from=2026-11-21T18:00:00Z&to=2026-11-21T19:00:00Z", 1); !strings.Contains(got, "stored with a token") {
		t.Fatalf("query through the Entra ID store: %q", got)
	}
	if got := s.getLines("/v1/logins/mi-user", 1); !strings.Contains(got, `"user":"mi-user"`) {
		t.Fatalf("login read back through the Entra ID table store: %q", got)
	}
	if s.stop() != 0 {
		t.Fatal("ingest did not exit 0")
	}
	out, err := ingestexec.Command(binary, append([]string{"ls", "idsvc/"}, args...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "idsvc/2026/11/21/1800/000001.log") {
		t.Fatalf("ingest ls with --storage-account: %v\n%s", err, out)
	}
	if requests.Load() == 0 {
		t.Fatal("no token was asked of the identity endpoint")
	}

	// A token for another audience is refused by the service, and the
	// command says so: the token is what lets it in.
	audience = "https://vault.azure.net"
	out, err = ingestexec.Command(binary, append([]string{"ls", "idsvc/"}, args...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "403 AuthenticationFailed") {
		t.Fatalf("ingest ls with a token for another audience: err %v, want 403 AuthenticationFailed\n%s", err, out)
	}
}

// testJWT is an unsigned token with the claims Azurite's basic OAuth mode
// checks: issuer, audience and lifetime.
func testJWT(aud string, exp int64) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Add(-time.Minute).Unix()
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." +
		enc(map[string]any{"aud": aud, "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
			"iat": now, "nbf": now, "exp": exp, "oid": "11111111-1111-1111-1111-111111111111"}) +
		"." + base64.RawURLEncoding.EncodeToString([]byte("unsigned"))
}

// selfSignedCert writes a certificate for 127.0.0.1 (its own CA) and its key.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
