//go:build !linux

package lambdaemu

import "syscall"

// procAttr puts an environment's process in a group of its own, so that
// killing the environment kills whatever the function started too.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
