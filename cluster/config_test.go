package cluster

import (
	"net"
	"strings"
	"testing"
	"time"

	"ingest/internal/configtest"
)

func TestConfigFlagsDefaultToDefaultConfig(t *testing.T) {
	configtest.FlagsDefault(t, DefaultConfig)
}

func TestConfigValidate(t *testing.T) {
	f := func(hb, exp time.Duration, want string) {
		t.Helper()
		c := Config{Heartbeat: hb, Expiry: exp}
		configtest.Validate(t, c, want != "")
		err := c.Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Validate(%v, %v) = %v, want %q", hb, exp, err, want)
		}
	}
	d := DefaultConfig()
	f(d.Heartbeat, d.Expiry, "")
	f(time.Second, 2*time.Second, "")
	f(0, time.Second, "--cluster-heartbeat")
	f(time.Second, 1500*time.Millisecond, "--cluster-expiry")
}

func TestDefaultURL(t *testing.T) {
	f := func(addr net.Addr, tls bool, want string) {
		t.Helper()
		if got := DefaultURL(addr, tls); got != want {
			t.Errorf("DefaultURL(%v, %v) = %q, want %q", addr, tls, got, want)
		}
	}
	f(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}, false, "http://10.1.2.3:8080")
	f(&net.TCPAddr{IP: net.ParseIP("fd00::7"), Port: 443}, true, "https://[fd00::7]:443")
	host := hostAddr(net.InterfaceAddrs)
	want := "http://127.0.0.1:9000"
	if host != nil {
		want = "http://" + net.JoinHostPort(host.String(), "9000")
	}
	f(&net.TCPAddr{Port: 9000}, false, want)

	addrs := func(as ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var out []net.Addr
			for _, a := range as {
				_, n, _ := net.ParseCIDR(a)
				n.IP, _, _ = net.ParseCIDR(a)
				out = append(out, n)
			}
			return out, nil
		}
	}
	if ip := hostAddr(addrs("127.0.0.1/8", "fe80::1/64", "fd00::2/64", "10.0.0.7/24")); ip.String() != "10.0.0.7" {
		t.Errorf("hostAddr = %v, want the IPv4 10.0.0.7", ip)
	}
	if ip := hostAddr(addrs("127.0.0.1/8", "fd00::2/64")); ip.String() != "fd00::2" {
		t.Errorf("hostAddr = %v, want fd00::2", ip)
	}
}
