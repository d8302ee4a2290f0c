package lambdaemu

import "syscall"

// procAttr puts an environment's process in a group of its own, so that
// killing the environment kills whatever the function started too, and has
// Linux kill it if the process that runs the Pool dies first (no
// environment outlives its emulator).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
