#!/bin/sh
# Container entrypoint for every mnemonet node.
# A scaled service has no fixed name, so each replica advertises its own address on the compose
# network (the container's IP) unless MNEMONET_ADVERTISE_URL (or --advertise-url) says otherwise.
set -eu
if [ -z "${MNEMONET_ADVERTISE_URL:-}" ]; then
  ip="$(python -c 'import socket; print(socket.gethostbyname(socket.gethostname()))')"
  MNEMONET_ADVERTISE_URL="http://${ip}:${MNEMONET_PORT:-9000}"
  export MNEMONET_ADVERTISE_URL
fi
exec "$@"
