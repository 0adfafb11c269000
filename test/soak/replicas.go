package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/localcluster"
)

// component is one of Troupe's binaries, run as two replicas with leader
// election.
type component struct {
	name   string
	binary string
	// lease is the name of its leader-election Lease in leaseNamespace.
	lease string
	// args are both replicas' flags but the metrics address.
	args     []string
	logDir   string
	replicas []*replica
	// onExit hears every exit: the replica, whether the soak caused it
	// (a SIGKILL, or a SIGSTOP that cost the lease), and the last lines
	// of its log.
	onExit func(r *replica, planned bool, tail string, err error)
}

// replica is one process of a component, restarted whenever it exits
// until the soak ends.
type replica struct {
	comp  *component
	index int

	mu sync.Mutex
	// proc is the current incarnation; metrics its metrics address.
	proc    *localcluster.Proc
	metrics string
	starts  int
	// stopped: the soak sent SIGSTOP and not yet SIGCONT.
	stopped bool
	// planned: the soak caused this incarnation's end (SIGKILL), or may
	// have (a SIGSTOP past the lease makes the process lose it and exit).
	planned bool
	// logStart is the log's size when this incarnation started, so that
	// its tail is its own.
	logStart int64
}

func (r *replica) name() string { return fmt.Sprintf("%s-%d", r.comp.name, r.index) }

func (r *replica) logPath() string { return filepath.Join(r.comp.logDir, r.name()+".log") }

// start starts a new incarnation with a free metrics port.
func (r *replica) start() error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	args := append(append([]string(nil), r.comp.args...), "--metrics-bind-address="+addr)
	f, err := os.OpenFile(r.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, _ := f.Stat()
	r.mu.Lock()
	r.starts++
	n := r.starts
	r.mu.Unlock()
	fmt.Fprintf(f, "=== soak: start %d of %s at %s: %s %s\n", n, r.name(), time.Now().UTC().Format(time.RFC3339Nano), r.comp.binary, strings.Join(args, " "))
	_ = f.Close()
	p, err := localcluster.Start(r.name(), r.comp.binary, args, r.logPath())
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc, r.metrics, r.stopped, r.planned = p, addr, false, false
	if st != nil {
		r.logStart = st.Size()
	}
	r.mu.Unlock()
	return nil
}

// supervise keeps the replica running until ctx ends: whenever it exits,
// it is reported and started again, as a Deployment's kubelet would.
func (r *replica) supervise(ctx context.Context) {
	for {
		r.mu.Lock()
		p := r.proc
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
		}
		_, err := p.Exited()
		r.mu.Lock()
		planned, from := r.planned, r.logStart
		r.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		r.comp.onExit(r, planned, logTail(r.logPath(), from), err)
		// A moment, as a kubelet's restart does not come at once either,
		// and so that a replica that cannot start does not spin.
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
		if err := r.start(); err != nil {
			r.comp.onExit(r, false, "", fmt.Errorf("restart: %w", err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			_ = r.start()
		}
	}
}

// kill sends SIGKILL to the current incarnation; supervise restarts it.
func (r *replica) kill() error {
	r.mu.Lock()
	p := r.proc
	r.planned = true
	r.mu.Unlock()
	return p.Kill(10 * time.Second)
}

// pause sends SIGSTOP: the process keeps its lease in its own belief,
// and loses it in the API server's once the lease expires.
func (r *replica) pause() error {
	r.mu.Lock()
	p := r.proc
	r.stopped, r.planned = true, true
	r.mu.Unlock()
	return p.Signal(syscall.SIGSTOP)
}

// resume sends SIGCONT to the incarnation pause stopped, if it still runs.
func (r *replica) resume() error {
	r.mu.Lock()
	p, stopped := r.proc, r.stopped
	r.stopped = false
	r.mu.Unlock()
	if !stopped {
		return nil
	}
	return p.Signal(syscall.SIGCONT)
}

// isStopped reports whether the replica is paused.
func (r *replica) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// leaderStatus asks the replica whether it leads: controller-runtime's
// leader_election_master_status gauge on its metrics endpoint. A paused
// replica is not asked (it cannot answer).
func (r *replica) leaderStatus(ctx context.Context) (bool, error) {
	r.mu.Lock()
	addr, stopped, p := r.metrics, r.stopped, r.proc
	r.mu.Unlock()
	if stopped {
		return false, nil
	}
	if done, _ := p.Exited(); done {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	return leadsIn(resp.Body, r.comp.lease)
}

// leadsIn reads Prometheus text for leader_election_master_status of the
// named lease.
func leadsIn(r io.Reader, lease string) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	prefix := `leader_election_master_status{name="` + lease + `"}`
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(line, prefix)) == "1", nil
		}
	}
	return false, sc.Err()
}

// leader finds the leading replica: the Lease must be held and fresh, and
// the replica that says it leads (its leader-election gauge) is taken as
// the holder. It returns nil when none leads now (a failover under way).
// The Lease's holder identity is hostname_uuid, the same hostname for
// both replicas, so the identity alone cannot name the process.
func (c *component) leader(ctx context.Context, cl client.Reader, leaseDuration time.Duration) (*replica, string, error) {
	lease := &coordinationv1.Lease{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: c.lease}, lease); err != nil {
		return nil, "", client.IgnoreNotFound(err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > leaseDuration {
		return nil, "", nil
	}
	var leaders []*replica
	for _, r := range c.replicas {
		if ok, err := r.leaderStatus(ctx); err == nil && ok {
			leaders = append(leaders, r)
		}
	}
	if len(leaders) != 1 {
		// None (the new leader has not said so yet), or two (one just
		// continued from a pause and has not noticed it lost).
		return nil, holder, nil
	}
	return leaders[0], holder, nil
}

// logTail is the last lines of a log from offset on, for an exit's
// report.
func logTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	start := max(from, st.Size()-16*1024)
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return ""
	}
	raw, _ := io.ReadAll(f)
	return string(raw)
}

// exitCause reads why a replica exited from its log's tail: a crash (a
// Go panic or fatal error), its lease lost, or something else.
func exitCause(tail string) (crashed bool, why string) {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			end := min(len(lines), i+12)
			return true, strings.Join(lines[i:end], "\n")
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "leader election lost") || strings.Contains(l, "leaderelection lost") {
			return false, "lost its lease"
		}
	}
	if len(lines) > 0 {
		return false, lines[len(lines)-1]
	}
	return false, "no log"
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
