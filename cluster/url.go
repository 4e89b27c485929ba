package cluster

import (
	"net"
	"strconv"
)

// DefaultURL is the URL peers reach this instance at when --advertise-url
// is not set: the listen address when it names one, else this host's first
// non-loopback address (a pod's IP), else loopback. https with TLS.
func DefaultURL(listen net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	ip, port := net.IPv4(127, 0, 0, 1), "0"
	if ta, ok := listen.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
		if !ta.IP.IsUnspecified() && ta.IP != nil {
			ip = ta.IP
		} else if a := hostAddr(net.InterfaceAddrs); a != nil {
			ip = a
		}
	}
	return scheme + "://" + net.JoinHostPort(ip.String(), port)
}

// hostAddr is the first global unicast address addrs lists, IPv4 first.
func hostAddr(addrs func() ([]net.Addr, error)) net.IP {
	as, err := addrs()
	if err != nil {
		return nil
	}
	var v6 net.IP
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP
		}
		if v6 == nil {
			v6 = n.IP
		}
	}
	return v6
}
