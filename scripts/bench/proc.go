package main

import (
	"bytes"
	"fmt"
	"ingest/internal/ingestexec"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var stderr = os.Stderr

// cpuSeconds reads utime+stime of a process from /proc (clock ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	s, _ := ingestexec.CPUSeconds(pid) // a process gone counts as 0
	return s
}

// peakRSSMiB reads VmHWM of a live process.
func peakRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// diskWriteBytes reads write_bytes of a live process from /proc/PID/io:
// the bytes it has sent toward storage (a page-cache write counts when it
// dirties the page). 0 when unreadable.
func diskWriteBytes(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	n, _ := ioWriteBytes(string(b))
	return n
}

// ioWriteBytes takes write_bytes from the text of /proc/PID/io.
func ioWriteBytes(io string) (float64, bool) {
	for _, line := range strings.Split(io, "\n") {
		if rest, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// proc is a peer or helper process the bench started.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	exited chan struct{}
}

func startProc(env []string, name string, args ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(name, args...), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitHTTP waits until url answers 2xx (any answer when anyStatus), for at
// most 30 s.
func (p *proc) waitHTTP(url string, anyStatus bool) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited at start: %s", p.cmd.Path, p.out.String())
		default:
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if anyStatus || resp.StatusCode/100 == 2 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return fmt.Errorf("%s not answering %s after 30 s: %s", p.cmd.Path, url, p.out.String())
}

// stop sends SIGTERM, then SIGKILL after 20 s, and waits for the exit.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// freeAddr is a 127.0.0.1:PORT free at the time of the call.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().String()
}

// peerVersion is the first line of `path arg`.
func peerVersion(path, arg string) string {
	out, _ := exec.Command(path, arg).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "ERROR") {
			return line
		}
	}
	return "version unknown"
}
