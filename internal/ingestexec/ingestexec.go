// Package ingestexec builds the ingest binary and runs it, for the
// integration tests, the benchmark and the fault suite. It is the one place
// that starts the binary, and it always starts it with a clean environment:
// an INGEST_<FLAG>, AZURE_* or GOMEMLIMIT variable in the caller's shell
// never changes what a test or a measurement runs (a stray
// AZURE_STORAGE_CONNECTION_STRING would send a test meant for the embedded
// backend to Azure).
//
//	bin, err := ingestexec.Build(dir, false)
//	p, err := ingestexec.Serve(bin, 0, "--data-dir", dataDir)
//	defer p.Kill()
//	http.Get(p.URL + "/v1/logs?...")
//	code, err := p.Stop(time.Minute)
package ingestexec

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build compiles ingest/cmd/ingest into dir (with the race detector when
// race is set) and returns the executable's path. It works from any
// directory inside the module.
func Build(dir string, race bool) (string, error) {
	name := "ingest"
	args := []string{"build", "-o"}
	if race {
		name = "ingest-race"
	}
	bin := filepath.Join(dir, name)
	args = append(args, bin)
	if race {
		args = append(args, "-race")
	}
	args = append(args, "ingest/cmd/ingest")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cannot build ingest (go %s): %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// Env is the caller's environment without the variables that configure
// ingest (INGEST_*, AZURE_*, GOMEMLIMIT), plus extra ("NAME=value").
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "INGEST_") || strings.HasPrefix(name, "AZURE_") || name == "GOMEMLIMIT" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// Command is exec.Command(bin, args...) with the clean Env.
func Command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = Env()
	return cmd
}

// Process is one running `ingest serve`.
type Process struct {
	URL  string // http://127.0.0.1:PORT, https:// with --tls-cert
	Port int
	Cmd  *exec.Cmd

	stderr lockedBuffer
	exited chan struct{}
}

// Serve starts `ingest serve --listen 127.0.0.1:PORT args...` (a free port
// when port is 0) and waits until /healthz answers 200, for at most 30 s.
// Its standard error is kept (Stderr) and also copied to tee when not nil.
// With --tls-cert among args the URL is https and the health check does not
// verify the certificate (only up or not matters here).
func Serve(bin string, port int, tee *os.File, args ...string) (*Process, error) {
	return ServeEnv(bin, port, tee, nil, args...)
}

// ServeEnv is Serve with env (NAME=value) added to the server's
// environment, for settings that are not flags, such as GOMAXPROCS.
func ServeEnv(bin string, port int, tee *os.File, env []string, args ...string) (*Process, error) {
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	p := &Process{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, exited: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second}
	if slices.Contains(args, "--tls-cert") {
		p.URL = "https://127.0.0.1:" + strconv.Itoa(port)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	}
	p.Cmd = Command(bin, append([]string{"serve", "--listen", "127.0.0.1:" + strconv.Itoa(port)}, args...)...)
	p.Cmd.Env = append(p.Cmd.Env, env...)
	p.Cmd.Stderr = &p.stderr
	if tee != nil {
		p.stderr.tee = tee
	}
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start ingest: %w", err)
	}
	go func() { _ = p.Cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("ingest exited at start (%s):\n%s", p.Cmd.ProcessState, p.Stderr())
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("ingest not healthy 30s after start:\n%s", p.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stderr is what the process wrote to standard error so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop sends SIGTERM and waits up to timeout for the exit; it returns the
// exit code, or an error (and kills the process) when it did not exit.
func (p *Process) Stop(timeout time.Duration) (int, error) {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		p.Kill()
		return -1, fmt.Errorf("ingest did not exit %s after SIGTERM", timeout)
	}
}

// Kill sends SIGKILL (kill -9) and waits for the exit. Killing a process
// that has already exited does nothing.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Status reads /proc/PID/status fields in bytes (VmRSS, VmHWM) or counts
// (Threads); ok is false once the process is gone.
func (p *Process) Status(field string) (v int64, ok bool) {
	return ProcStatus(p.Cmd.Process.Pid, field)
}

// ProcStatus is Status of any process pid (a peer the caller started).
func ProcStatus(pid int, field string) (v int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, field+":"); found {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, false
			}
			if len(f) > 1 && f[1] == "kB" {
				n <<= 10
			}
			return n, true
		}
	}
	return 0, false
}

// MachineCPUs is the machine's CPU count from /proc/cpuinfo (0 when it
// cannot be read), for the scripts' reports: unlike runtime.NumCPU it
// does not shrink with the caller's CPU affinity.
func MachineCPUs() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// OpenFiles counts the process's open file descriptors.
func (p *Process) OpenFiles() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Cmd.Process.Pid))
	return len(ents), err
}

// CPUSeconds is the CPU time (user and system) process pid has used so
// far, from /proc/PID/stat in clock ticks of 1/100 s.
func CPUSeconds(pid int) (float64, error) {
	u, err := readUsage(fmt.Sprintf("/proc/%d/stat", pid), fmt.Sprintf("process %d", pid))
	return u.CPU(), err
}

// Usage is what the kernel has counted of a thread's or a process's work
// so far.
type Usage struct {
	User, System float64 // CPU seconds in user space and in the kernel
	// MinorFaults are page faults served without I/O: for a process that
	// keeps what it receives in memory, one per page of it touched first.
	MinorFaults int64
}

// CPU is the user and system time together.
func (u Usage) CPU() float64 { return u.User + u.System }

// ThreadUsage is the Usage of one thread tid of process pid (its main
// thread when tid is pid), from /proc/PID/task/TID/stat.
func ThreadUsage(pid, tid int) (Usage, error) {
	return readUsage(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid), fmt.Sprintf("thread %d of process %d", tid, pid))
}

func readUsage(path, what string) (Usage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Usage{}, err
	}
	u, err := parseStat(string(b))
	if err != nil {
		return Usage{}, fmt.Errorf("cannot read the CPU time and page faults of %s: %w", what, err)
	}
	return u, nil
}

// parseStat takes minflt, utime and stime (in seconds) from a
// /proc/PID/stat line.
func parseStat(stat string) (Usage, error) {
	// The command name, in parentheses, may hold spaces and parentheses:
	// count fields after the last ')'. minflt, utime and stime are the
	// 10th, 14th and 15th fields.
	i := strings.LastIndex(stat, ") ")
	if i < 0 {
		return Usage{}, errors.New("no command name in /proc/PID/stat")
	}
	f := strings.Fields(stat[i+2:])
	if len(f) < 13 {
		return Usage{}, errors.New("short /proc/PID/stat")
	}
	var n [3]int64
	for j, v := range []string{f[7], f[11], f[12]} {
		var err error
		if n[j], err = strconv.ParseInt(v, 10, 64); err != nil {
			return Usage{}, err
		}
	}
	return Usage{MinorFaults: n[0], User: float64(n[1]) / 100, System: float64(n[2]) / 100}, nil
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ErrNoMetric is returned by Metric when the family or sample is absent.
var ErrNoMetric = errors.New("no such metric sample")

// Metric reads one unlabelled sample (or the sum of every labelled sample
// of the family, when name has no '{') from a Prometheus text exposition.
func Metric(text []byte, name string) (float64, error) {
	var sum float64
	found := false
	for _, line := range bytes.Split(text, []byte{'\n'}) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		series, value, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		s := string(series)
		if s != name && !(strings.HasPrefix(s, name+"{") && !strings.Contains(name, "{")) {
			continue
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(value)), 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse %s: %w", line, err)
		}
		sum += f
		found = true
	}
	if !found {
		return 0, fmt.Errorf("%s: %w", name, ErrNoMetric)
	}
	return sum, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	tee *os.File
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tee != nil {
		_, _ = l.tee.Write(p)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
