package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSyslog: the real binary with --syslog-tcp and --syslog-udp stores
// RFC 5424 and RFC 3164 messages sent octet-counted and newline-framed on
// one TCP connection, and datagrams on UDP, mapped into events; a
// message over --syslog-max-message-bytes is dropped and counted, the
// ones around it kept.
func TestSyslog(t *testing.T) {
	tcpPort, udpPort := freePort(t), freePort(t)
	s := start(t, t.TempDir(), "--flush-interval", "100ms", "--syslog-tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort),
		"--syslog-udp", fmt.Sprintf("127.0.0.1:%d", udpPort), "--syslog-max-message-bytes", "1024")
	t0 := time.Now().UTC().Truncate(time.Second)
	stamp := t0.Format(time.RFC3339Nano)
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort))
	if err != nil {
		t.Fatal(err)
	}
	m1 := "<165>1 " + stamp + " web-1 payments 42 ID7 [ex@1 order=\"o-1\"] \xef\xbb\xbfcard declined"
	m3 := "<11>" + t0.Format("Jan _2 15:04:05") + " web-2 payments[9]: refund failed"
	stream := strconv.Itoa(len(m1)) + " " + m1 +
		"<14>1 " + stamp + " web-1 payments - - - " + strings.Repeat("x", 2000) + "\n" + // dropped: too long
		m3 + "\n"
	if _, err := io.WriteString(c, stream); err != nil {
		t.Fatal(err)
	}
	c.Close()
	u, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", udpPort))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(u, "<12>1 %s router-1 payments - - - link flapping", stamp)
	u.Close()

	evs := s.queryNDJSON("payments", t0.Add(-time.Minute), t0.Add(time.Minute), 3)
	byMsg := map[string]map[string]any{}
	for _, e := range evs {
		byMsg[e["message"].(string)] = e
	}
	checkFields(t, "rfc5424 octet-counted", byMsg["card declined"], map[string]any{"level": "info", "host": "web-1", "facility": "local4", "procid": "42", "msgid": "ID7", "ex@1.order": "o-1"})
	checkFields(t, "rfc3164 newline-framed", byMsg["refund failed"], map[string]any{"level": "error", "host": "web-2", "facility": "user", "procid": "9"})
	checkFields(t, "udp", byMsg["link flapping"], map[string]any{"level": "warn", "host": "router-1"})
	_, metrics := s.get("/metrics")
	for _, want := range []string{`ingest_syslog_messages_dropped_total{reason="too_long"} 1`, `ingest_protocol_events_total{protocol="syslog",result="accepted"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestSyslogTLS: --syslog-tls serves the TCP listener with the server's
// certificate; a plain-text client gets nothing stored.
func TestSyslogTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSignedCert(t, dir)
	port := freePort(t)
	s := start(t, dir+"/data", "--flush-interval", "100ms", "--tls-cert", cert, "--tls-key", key,
		"--syslog-tcp", fmt.Sprintf("127.0.0.1:%d", port), "--syslog-tls")
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	conf := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), conf)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC()
	msg := "<14>1 " + t0.Format(time.RFC3339Nano) + " h tlsapp - - - over tls"
	fmt.Fprintf(c, "%d %s", len(msg), msg)
	c.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	q := url.Values{"service": {"tlsapp"}, "from": {t0.Add(-time.Minute).Format(time.RFC3339)}, "to": {t0.Add(time.Minute).Format(time.RFC3339)}}
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(body, "over tls"); time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get(s.url + "/v1/logs?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	if !strings.Contains(body, `"message":"over tls"`) {
		t.Fatalf("the message sent over TLS is not stored: %q", body)
	}
}

// TestShipperFluentBitSyslog runs Fluent Bit's syslog output, as
// documented in docs/shippers/fluent-bit-syslog.conf, into ingest.
func TestShipperFluentBitSyslog(t *testing.T) {
	port := freePort(t)
	s := start(t, t.TempDir(), "--flush-interval", "100ms", "--syslog-tcp", fmt.Sprintf("127.0.0.1:%d", port))
	t0 := time.Now().Add(-time.Minute)
	runFluentBitOn(t, "5514", strconv.Itoa(port), "docs/shippers/fluent-bit-syslog.conf", 1,
		`{"message":"card declined","app":"checkout","host":"fb-1","severity":3}`, 3)
	evs := s.queryNDJSON("checkout", t0, time.Now().Add(time.Minute), 3)
	checkFields(t, "fluent-bit syslog", evs[0], map[string]any{"service": "checkout", "level": "error", "host": "fb-1", "message": "card declined"})
}

// TestShipperLogger sends with util-linux logger, over TCP with octet
// counting (RFC 5424 with structured data) and over UDP (RFC 3164).
func TestShipperLogger(t *testing.T) {
	logger, err := exec.LookPath("logger")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("util-linux logger is not installed (Debian: bsdutils, an essential package): %v", err)
		}
		t.Skip("util-linux logger is not installed")
	}
	tcpPort, udpPort := freePort(t), freePort(t)
	s := start(t, t.TempDir(), "--flush-interval", "100ms", "--syslog-tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort), "--syslog-udp", fmt.Sprintf("127.0.0.1:%d", udpPort))
	t0 := time.Now().Add(-time.Minute)
	for _, args := range [][]string{
		{"--tcp", "--octet-count", "--rfc5424", "-P", strconv.Itoa(tcpPort), "-p", "local3.err", "--msgid", "M1", "--sd-id", "order@1", "--sd-param", `id="o-7"`, "-t", "billing", "over tcp"},
		{"--udp", "--rfc3164", "-P", strconv.Itoa(udpPort), "-p", "user.warning", "-t", "billing", "over udp"},
	} {
		if out, err := exec.Command(logger, append([]string{"-n", "127.0.0.1"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("logger %v: %v: %s", args, err, out)
		}
	}
	evs := s.queryNDJSON("billing", t0, time.Now().Add(time.Minute), 2)
	byMsg := map[string]map[string]any{}
	for _, e := range evs {
		byMsg[e["message"].(string)] = e
	}
	checkFields(t, "logger tcp", byMsg["over tcp"], map[string]any{"level": "error", "facility": "local3", "msgid": "M1", "order@1.id": "o-7"})
	checkFields(t, "logger udp", byMsg["over udp"], map[string]any{"level": "warn", "facility": "user"})
}

// TestShipperRsyslogSyslogNgWireFormat replays what the configurations of
// docs/shippers/syslog.md send, the daemons not being run here: rsyslog's
// omfwd with template RSYSLOG_SyslogProtocol23Format and octet-counted
// framing ("<%PRI%>1 %TIMESTAMP:::date-rfc3339% %HOSTNAME% %APP-NAME%
// %PROCID% %MSGID% %STRUCTURED-DATA% %msg%\n", framed as LEN SP MSG, the
// template's trailing LF counted in the frame or not: both are sent), and
// syslog-ng 3.38's syslog() driver (RFC 5424 with a zoned time and its
// meta sequenceId, octet-counted as RFC 5425 frames). The documented
// snippets are read and checked for the settings this replay assumes.
func TestShipperRsyslogSyslogNgWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/syslog.md", `type="omfwd"`, `protocol="tcp"`, `template="RSYSLOG_SyslogProtocol23Format"`,
		`TCP_Framing="octet-counted"`, `port="5514"`, `syslog("ingest.example" transport("tcp") port(5514))`)
	port := freePort(t)
	s := start(t, t.TempDir(), "--flush-interval", "100ms", "--syslog-tcp", fmt.Sprintf("127.0.0.1:%d", port))
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	frame := func(msg string) string { return strconv.Itoa(len(msg)) + " " + msg }
	sends := map[string]string{
		"rsyslog": frame("<131>1 "+t0.Format("2006-01-02T15:04:05.000000-07:00")+" app-7 cron 311 - - job failed") +
			frame("<134>1 "+t0.Format("2006-01-02T15:04:05.000000-07:00")+" app-7 cron - - - job done\n"),
		"syslog-ng": frame("<28>1 " + t0.Format("2006-01-02T15:04:05-07:00") + " edge-1 cron 44 - [meta sequenceId=\"1\"] disk nearly full"),
	}
	for who, stream := range sends {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, stream); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		c.Close()
	}
	evs := s.queryNDJSON("cron", t0.Add(-time.Minute), t0.Add(time.Minute), 3)
	byMsg := map[string]map[string]any{}
	for _, e := range evs {
		byMsg[e["message"].(string)] = e
	}
	checkFields(t, "rsyslog", byMsg["job failed"], map[string]any{"level": "error", "host": "app-7", "facility": "local0", "procid": "311", "ts": t0.Format("2006-01-02T15:04:05.0000000Z")})
	checkFields(t, "rsyslog", byMsg["job done"], map[string]any{"level": "info", "host": "app-7", "facility": "local0"})
	checkFields(t, "syslog-ng", byMsg["disk nearly full"], map[string]any{"level": "warn", "host": "edge-1", "facility": "daemon", "procid": "44", "meta.sequenceId": "1"})
}
