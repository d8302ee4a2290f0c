#!/bin/sh
# The script resource hello-install: heddle runs it on every node of a hello
# cluster as the hello service's install action.
set -e
mkdir -p "$HOME/hello"
echo "hello from $HEDDLE_HOSTNAME (node $HEDDLE_NODE_NUM)" > "$HOME/hello/greeting"
echo "installed hello on $HEDDLE_HOSTNAME"
