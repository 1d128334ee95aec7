#!/usr/bin/env bash
# A Docker-compatible engine on a machine that has none, so the testcontainers path runs for real.
#
# Podman serves the Docker API on a unix socket; the image `pgvector/pgvector:pg16` cannot be
# pulled here, so a stand-in with the same name is built locally from the PostgreSQL 16 + pgvector
# binaries that the `pgserver` package ships (busybox for the shell, an entrypoint that honours
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB like the official one, psql on PATH for
# testcontainers' readiness probe). On GitHub's runners use the real Docker and image instead.
#
# Usage (root): eval "$(bash .ci/docker-standin.sh [PYTHON])"   (.ci/run does this)
#   PYTHON: an interpreter whose environment has pgserver installed (default: python3).
# It prints the environment to export: DOCKER_HOST, TESTCONTAINERS_RYUK_DISABLED,
# TESTCONTAINERS_CONNECTION_MODE. Idempotent; diagnostics go to stderr.
set -euo pipefail
PY=${1:-python3}
SOCK=/run/podman/podman.sock
IMAGE=docker.io/pgvector/pgvector:pg16
log() { echo "docker-standin: $*" >&2; }

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! [ -x /bin/busybox ]; then
  log "installing podman, runc, busybox-static"
  apt-get install -y -qq podman runc busybox-static >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null && apt-get install -y -qq podman runc busybox-static >/dev/null; }
fi

# This kind of machine has hybrid cgroups and no CAP_SYS_RESOURCE: runc with cgroupfs, low ulimits.
mkdir -p /etc/containers
cat > /etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
CONF

if ! podman image exists "$IMAGE"; then
  PGSERVER=$("$PY" -c 'import os, pgserver; print(os.path.dirname(pgserver.__file__))')
  SITE=$(dirname "$PGSERVER")
  ROOT=$(mktemp -d)
  trap 'rm -rf "$ROOT"' EXIT
  mkdir -p "$ROOT"/{bin,lib/x86_64-linux-gnu,lib64,etc,opt/site,tmp,var/lib/postgresql,run/postgresql}
  cp /bin/busybox "$ROOT/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$ROOT/bin/$applet"
  done
  for lib in libc.so.6 libm.so.6 libpthread.so.0 librt.so.1 libdl.so.2 libz.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$lib" "$ROOT/lib/x86_64-linux-gnu/"
  done
  cp -L /lib64/ld-linux-x86-64.so.2 "$ROOT/lib64/"
  cp -r "$PGSERVER" "$ROOT/opt/site/pgserver"
  [ -d "$SITE/pgserver.libs" ] && cp -r "$SITE/pgserver.libs" "$ROOT/opt/site/"
  rm -rf "$ROOT/opt/site/pgserver/__pycache__"
  printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh\n' > "$ROOT/etc/passwd"
  printf 'root:x:0:\npostgres:x:999:\n' > "$ROOT/etc/group"
  cat > "$ROOT/entrypoint.sh" <<'ENTRY'
#!/bin/sh
set -e
PG=/opt/site/pgserver/pginstall/bin
PGDATA=/var/lib/postgresql/data
mkdir -p $PGDATA /run/postgresql
chown -R postgres:postgres /var/lib/postgresql /run/postgresql /tmp
chmod 1777 /tmp
: "${POSTGRES_USER:=postgres}" "${POSTGRES_PASSWORD:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s $PGDATA/PG_VERSION ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile; chown postgres /tmp/pwfile
  su postgres -s /bin/sh -c "$PG/initdb -D $PGDATA -U '$POSTGRES_USER' --pwfile=/tmp/pwfile --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C >/tmp/initdb.log"
  rm -f /tmp/pwfile
  echo "host all all 0.0.0.0/0 scram-sha-256" >> $PGDATA/pg_hba.conf
  su postgres -s /bin/sh -c "$PG/pg_ctl -D $PGDATA -o \"-c listen_addresses='' -k /run/postgresql\" -w start >/tmp/pgctl.log"
  if [ "$POSTGRES_DB" != "postgres" ]; then
    su postgres -s /bin/sh -c "$PG/psql -h /run/postgresql -U '$POSTGRES_USER' -d postgres -c 'CREATE DATABASE \"$POSTGRES_DB\"'" >/dev/null
  fi
  su postgres -s /bin/sh -c "$PG/pg_ctl -D $PGDATA -m fast -w stop >/tmp/pgctl.log"
fi
exec su postgres -s /bin/sh -c "exec $PG/postgres -D $PGDATA -c listen_addresses='*' -k /run/postgresql"
ENTRY
  chmod +x "$ROOT/entrypoint.sh"
  tar -C "$ROOT" -cf "$ROOT.tar" .
  podman import --change 'ENV PATH=/opt/site/pgserver/pginstall/bin:/bin' \
    --change 'ENTRYPOINT ["/entrypoint.sh"]' --change 'EXPOSE 5432' "$ROOT.tar" "$IMAGE" >/dev/null
  rm -f "$ROOT.tar"
  log "built $IMAGE from $PGSERVER"
fi

# A service started by an earlier run from a folder since deleted (a removed clone) answers pings
# but cannot start containers (conmon: "Failed to get working directory"): replace it.
services=""
if command -v pgrep >/dev/null; then
  services=$(pgrep -f "podman system service --time=0 unix://$SOCK" || true)
fi
for pid in $services; do
  case "$(readlink "/proc/$pid/cwd" 2>/dev/null)" in
    *" (deleted)")
      log "replacing the podman service $pid, whose working folder was deleted"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$SOCK" ;;
  esac
done
if ! curl -s --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; then
  mkdir -p "$(dirname "$SOCK")"
  # The service's whole subshell gets its own streams and execs podman: a shell left waiting on
  # it would hold the caller's `$(...)` pipe open, and `eval "$(bash docker-standin.sh)"` would
  # never return. It runs from / so that removing the caller's folder cannot break it.
  (cd / && exec nohup podman system service --time=0 "unix://$SOCK") </dev/null >/tmp/podman-service.log 2>&1 &
  for _ in $(seq 50); do curl -s --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1 && break; sleep 0.2; done
  log "podman API serving at unix://$SOCK"
fi

echo "export DOCKER_HOST=unix://$SOCK"
echo "export TESTCONTAINERS_RYUK_DISABLED=true"         # the reaper image cannot be pulled here
echo "export TESTCONTAINERS_CONNECTION_MODE=docker_host" # this VM looks like a container to testcontainers
