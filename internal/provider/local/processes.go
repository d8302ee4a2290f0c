package local

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// nodeMarker is the variable in the environment of every command a node
// runs, naming the node's directory. Children inherit it, detached ones
// too (setsid and nohup keep the environment), which is how Delete finds
// what a node left running once its sessions are gone.
const nodeMarker = "HEDDLE_LOCAL_NODE"

func markerOf(nodeDir string) string { return nodeMarker + "=" + nodeDir }

// Processes lists the processes still running that nodes of this provider
// started (by their environment, see nodeMarker), those of deleted nodes
// included: a test checks with it that it left nothing behind. It reads
// /proc, so it finds nothing where there is none; a process that cleared
// its environment is not found.
func (l *Local) Processes() ([]int, error) {
	return processesMarked(func(entry string) bool {
		return strings.HasPrefix(entry, nodeMarker+"="+filepath.Join(l.dir, "nodes")+string(filepath.Separator))
	})
}

// killNodeProcesses kills every process the node in nodeDir started and
// that still runs, until none is left (a process may fork while it is
// killed).
func killNodeProcesses(nodeDir string) error {
	marker := markerOf(nodeDir)
	for range 10 {
		pids, err := processesMarked(func(entry string) bool { return entry == marker })
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return errors.New("local: processes kept starting while they were killed")
}

// processesMarked lists the processes whose environment holds an entry
// match accepts; processes of other users, whose environment cannot be
// read, are skipped, and so are zombies, whose environment reads empty.
func processesMarked(match func(entry string) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !anyEntry(env, match) {
			continue
		}
		out = append(out, pid)
	}
	return out, nil
}

func anyEntry(env []byte, match func(string) bool) bool {
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if len(entry) > 0 && match(string(entry)) {
			return true
		}
	}
	return false
}
