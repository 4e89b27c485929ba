// Package azurite starts the Azure Storage emulator for tests: the real
// Azurite from the npm registry (pinned in the repository's package.json),
// on free 127.0.0.1 ports with in-memory persistence, stopped after use.
//
//	func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }
//	func TestX(t *testing.T) { conn := azurite.ConnString(t) ... }
//
// When Azurite is not installed the tests that need it are skipped, except
// under CI=true, where that is a failure: CI must never pass by skipping.
package azurite

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// AccountName and AccountKey are Azurite's well-known development account.
const (
	AccountName = "devstoreaccount1"
	AccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is one running Azurite.
type Server struct {
	BlobPort, TablePort int
	cmd                 *exec.Cmd
	stderr              bytes.Buffer
	exited              chan struct{}
}

// ConnString is a connection string for the server's blob and table services.
func (s *Server) ConnString() string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://127.0.0.1:%d/%s;TableEndpoint=http://127.0.0.1:%d/%s;",
		AccountName, AccountKey, s.BlobPort, AccountName, s.TablePort, AccountName)
}

// Binary finds node_modules/.bin/azurite in the module root (or $AZURITE_BIN).
func Binary() (string, error) {
	if p := os.Getenv("AZURITE_BIN"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "node_modules", ".bin", "azurite")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("cannot find Azurite at %s: run `npm ci` in %s", p, dir)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the module root (go.mod) above the working directory")
		}
		dir = parent
	}
}

// Start launches Azurite and waits until its ports accept connections.
// extra are more Azurite options (for example "--oauth", "basic", "--cert",
// FILE, "--key", FILE for token authentication over HTTPS). A port taken
// by someone else between choosing it and Azurite binding it means another
// try on other ports.
func Start(extra ...string) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		if s, err = start(extra); err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "EADDRINUSE") {
			return nil, err
		}
	}
	return nil, err
}

func start(extra []string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s := &Server{BlobPort: ports[0], TablePort: ports[1], exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{
		"--blobHost", "127.0.0.1", "--tableHost", "127.0.0.1", "--queueHost", "127.0.0.1",
		"--blobPort", strconv.Itoa(ports[0]), "--tablePort", strconv.Itoa(ports[1]), "--queuePort", strconv.Itoa(ports[2]),
		"--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry", "--silent", "--loose"}, extra...)...)
	s.cmd.Stderr = &s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start Azurite: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	// Generous: on a loaded machine Node.js takes long to start.
	deadline := time.Now().Add(90 * time.Second)
	for _, port := range ports[:2] {
		for {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-s.exited:
				return nil, fmt.Errorf("cannot start Azurite: it exited (%s): %s", s.cmd.ProcessState, s.stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				s.Stop()
				return nil, fmt.Errorf("cannot start Azurite: port %d not ready after 90s: %s", port, s.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return s, nil
}

// PID is the Azurite (Node.js) process's id, for its CPU time and memory.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop terminates Azurite (SIGTERM, then SIGKILL after 5 s).
func (s *Server) Stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// Pause stops the process in place (SIGSTOP): connections hang as in an
// outage. Resume continues it. Used by fault tests.
func (s *Server) Pause() error  { return syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP) }
func (s *Server) Resume() error { return syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT) }

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
)

// ConnString returns the connection string of the package's shared Azurite,
// starting it on first use. Without Azurite it skips the test, or fails it
// under CI=true. Tests sharing the server must use distinct container and
// table names.
func ConnString(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	return s.ConnString()
}

// Shared returns the package's shared server (see ConnString).
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Azurite is required under CI: %v", sharedErr)
		}
		t.Skipf("Azurite not available: %v", sharedErr)
	}
	return shared
}

// RunMain runs the tests and stops the shared Azurite afterwards.
func RunMain(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}
