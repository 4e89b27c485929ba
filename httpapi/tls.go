package httpapi

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// certReloader serves the certificate of --tls-cert/--tls-key and loads it
// again on Reload: a new handshake sees the new certificate, connections
// already open keep theirs.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads both files again; on error the previous certificate stays.
func (r *certReloader) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("cannot load the TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert.Store(&c)
	return nil
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// config is the server's TLS configuration: HTTP/1.1 only (fasthttp speaks
// no HTTP/2), TLS 1.2 or newer.
func (r *certReloader) config() *tls.Config {
	return &tls.Config{
		GetCertificate: r.getCertificate,
		NextProtos:     []string{"http/1.1"},
		MinVersion:     tls.VersionTLS12,
	}
}
