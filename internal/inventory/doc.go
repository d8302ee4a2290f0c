// Package inventory reads the hosts of an Ansible inventory, INI or YAML
// (ansible_host, ansible_port, ansible_user, ansible_ssh_private_key_file,
// with group vars, children and numeric ranges such as web[01:50]), or a
// plain list of [user@]host[:port] lines, for `heddle hosts import`.
//
// Only what heddle needs to register a static host is read; other variables
// are ignored. A document it cannot read is refused as a whole, with the
// line at fault, so an import is all or nothing from the start.
package inventory
