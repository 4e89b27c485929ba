package syslog

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

// Config is where the syslog listeners listen, and their limits.
type Config struct {
	TCP, UDP        string        // listen addresses; "" for none
	TLS             bool          // TLS on the TCP listener, with the server's certificate
	MaxMessageBytes int           // the longest message kept; longer ones are dropped and counted
	MaxConns        int           // open TCP connections at most; past it new ones are closed
	IdleTimeout     time.Duration // a TCP connection silent this long is closed
	UDPBufferBytes  int           // the UDP socket's receive buffer asked of the kernel
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{MaxMessageBytes: 64 << 10, MaxConns: 1024, IdleTimeout: 5 * time.Minute, UDPBufferBytes: 4 << 20}
}

// RegisterFlags adds the flags to fs, with c's values as defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.TCP, "syslog-tcp", c.TCP, "listen for syslog over TCP on this `ADDR` (RFC 5424 or 3164, octet-counted or newline-framed); empty: no listener")
	fs.StringVar(&c.UDP, "syslog-udp", c.UDP, "listen for syslog over UDP on this `ADDR` (one message per datagram, best effort); empty: no listener")
	fs.BoolVar(&c.TLS, "syslog-tls", c.TLS, "TLS on --syslog-tcp with the server's --tls-cert and --tls-key (RFC 5425)")
	fs.IntVar(&c.MaxMessageBytes, "syslog-max-message-bytes", c.MaxMessageBytes, "longest syslog message kept; a longer one is dropped and counted")
	fs.IntVar(&c.MaxConns, "syslog-max-conns", c.MaxConns, "open syslog TCP connections at most; past it new ones are closed")
	fs.DurationVar(&c.IdleTimeout, "syslog-idle-timeout", c.IdleTimeout, "close a syslog TCP connection that sends nothing for this long")
	flagutil.IntBytesVar(fs, &c.UDPBufferBytes, "syslog-udp-buffer-bytes", c.UDPBufferBytes, "receive buffer of the syslog UDP socket, for bursts while the server is busy (the kernel caps it at net.core.rmem_max); what overflows it is dropped by the kernel and counted")
}

// Validate checks the settings. It changes nothing. Without a listener
// the limits are not looked at (a zero Config is valid).
func (c *Config) Validate() error {
	if c.TCP == "" && c.UDP == "" && !c.TLS {
		return nil
	}
	for _, a := range []struct{ flag, addr string }{{"--syslog-tcp", c.TCP}, {"--syslog-udp", c.UDP}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("cannot use %s %q: want HOST:PORT or :PORT (%v)", a.flag, a.addr, err)
		}
	}
	if c.TLS && c.TCP == "" {
		return fmt.Errorf("cannot use --syslog-tls without --syslog-tcp")
	}
	if c.MaxMessageBytes < 480 || c.MaxMessageBytes > 1<<20 {
		return fmt.Errorf("cannot use --syslog-max-message-bytes %d: want 480 (RFC 3164's least) to 1MiB", c.MaxMessageBytes)
	}
	if c.MaxConns < 1 {
		return fmt.Errorf("cannot use --syslog-max-conns %d: want at least 1", c.MaxConns)
	}
	if c.UDPBufferBytes < 64<<10 || c.UDPBufferBytes > 1<<30 {
		return fmt.Errorf("cannot use --syslog-udp-buffer-bytes %d: want 64KiB to 1GiB", c.UDPBufferBytes)
	}
	if c.IdleTimeout <= 0 {
		return fmt.Errorf("cannot use --syslog-idle-timeout %s: want more than 0", c.IdleTimeout)
	}
	return nil
}
