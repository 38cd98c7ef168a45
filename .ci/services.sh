# Sourced by .ci/run and by the workflow's test shards (as root): the system packages the
# tests need, and a throwaway PostgreSQL cluster for the admin's storage tests.

# protobuf-compiler + libprotobuf-dev: etcd-client's build script (protoc and its includes);
# zookeeper + libslf4j-java (slf4j-simple, so ZooKeeper logs its readiness), etcd-server: the
# real servers of the zookeeper and etcd modes; redis-server: the Redis component cases ask for
# (`components: [redis]`), its image, and the gateway rate limiter's script tests (each test
# starts its own server); postgresql: the admin's PostgreSQL storage tests; chromium: the HTML
# report rendered in a browser; docker-compose: the external-target trial that brings
# compose/websocket.yml up.
install_packages() {
  local packages=(protobuf-compiler libprotobuf-dev zookeeper libslf4j-java etcd-server redis-server postgresql netcat-openbsd chromium docker-compose)
  local missing=() pkg
  for pkg in "${packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# Starts the cluster and exports GANTRY_TEST_POSTGRES_URL; `stop_postgres` stops it.
start_postgres() {
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  PG_DIR=$(mktemp -d /tmp/gantry-ci-pg.XXXXXX)
  # Below the kernel's ephemeral range (32768–60999 here): a port in it can be held, for a
  # moment, as the local end of some client connection, and PostgreSQL then cannot listen.
  local port=25432
  chown postgres "$PG_DIR"
  runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U gantry >/dev/null
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1" start
  export GANTRY_TEST_POSTGRES_URL="postgres://gantry@127.0.0.1:$port/postgres"
}

stop_postgres() {
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast stop >/dev/null || true
}
