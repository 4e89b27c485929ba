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

	"golang.org/x/sys/unix"
)

var stderr = os.Stderr

// cpuSeconds reads utime+stime of a process from /proc (clock ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	s, _ := ingestexec.CPUSeconds(pid) // a process gone counts as 0
	return s
}

// peakRSSMiB reads VmHWM of a live process.
func peakRSSMiB(pid int) float64 {
	v, _ := ingestexec.ProcStatus(pid, "VmHWM")
	return float64(v) / (1 << 20)
}

// blockDevice counts the bytes written to the block device that holds a
// directory, as the device's own statistics count them: whoever wrote
// them, file-system metadata included.
type blockDevice struct {
	stat string // /sys/dev/block/MAJ:MIN/stat; "" when there is none (tmpfs, overlay)
}

func deviceHolding(dir string) blockDevice {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return blockDevice{}
	}
	p := fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev))
	if _, err := os.Stat(p); err != nil {
		return blockDevice{}
	}
	return blockDevice{p}
}

// written is the bytes written to the device so far; 0 when unknown.
func (d blockDevice) written() float64 {
	if d.stat == "" {
		return 0
	}
	b, err := os.ReadFile(d.stat)
	if err != nil {
		return 0
	}
	n, _ := sectorsWritten(string(b))
	return n * 512
}

// sectorsWritten takes the sectors written (512 B each, whatever the
// device's own sector size) from the text of a block device's stat file.
func sectorsWritten(stat string) (float64, bool) {
	f := strings.Fields(stat)
	if len(f) < 7 {
		return 0, false
	}
	n, err := strconv.ParseFloat(f[6], 64)
	return n, err == nil
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
