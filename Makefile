# podroles: the usual targets. `make demo` and `make test` work on a fresh
# Debian machine: they install what is missing first.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BIN       := bin/podroles
CHECK_BIN := bin/podroles-check
LDFLAGS   := -s -w -X main.version=$(VERSION)
FUZZTIME  ?= 30s
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED := 0

.PHONY: all deps build demo test docs bench fuzz vet clean env-demo servers images nix24 nix226 nix231

all: build

# What the tests run, from Debian: nix 2.8 for podroles check; slapd, haproxy,
# PostgreSQL and nginx for the local environment of the scenario suites;
# podman and debootstrap for its containers provider; containerd, runc,
# the CNI plugins and nft (kube-proxy's) for the real node of the test
# cluster.
deps:
	@missing=""; \
	  test -x $(DEBIAN_NIX) || missing="$$missing nix-bin"; \
	  { command -v slapd || test -x /usr/sbin/slapd; } >/dev/null || missing="$$missing slapd ldap-utils"; \
	  { command -v haproxy || test -x /usr/sbin/haproxy; } >/dev/null || missing="$$missing haproxy"; \
	  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	  { command -v nginx || test -x /usr/sbin/nginx; } >/dev/null || missing="$$missing nginx"; \
	  command -v podman >/dev/null || missing="$$missing podman runc uidmap fuse-overlayfs slirp4netns catatonit"; \
	  { command -v debootstrap || test -x /usr/sbin/debootstrap; } >/dev/null || missing="$$missing debootstrap"; \
	  command -v containerd >/dev/null || missing="$$missing containerd"; \
	  { command -v nft || test -x /usr/sbin/nft; } >/dev/null || missing="$$missing nftables"; \
	  test -x /usr/lib/cni/bridge || missing="$$missing containernetworking-plugins"; \
	  command -v runc >/dev/null || missing="$$missing runc"; \
	  if [ -n "$$missing" ]; then \
	    echo "installing from Debian:$$missing"; \
	    $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  fi
	@$(DEBIAN_NIX) --version

# The nixes the tests run on (docs/nix-versions.md): Debian 12's nix-bin
# 2.8, and Nix 2.24.15 built once from its pinned source (scripts/build-nix.sh)
# into a folder named after the recipe's hash, so that a changed recipe builds
# anew and an unchanged one is reused; below, 2.26 and 2.31 the same way. The
# source is found beside the repository, where every developer machine and CI
# have it. The tests run each with a /nix of its own in a mount namespace
# (scripts/nix-own-root.sh).
DEBIAN_NIX    := /usr/bin/nix
# What make builds from pinned inputs lives in a machine-wide cache, each
# entry named after its recipe's hash: every clone on the machine (and CI's
# fresh clone) reuses it, and a changed recipe builds anew beside it.
# As a user, make's cache is under the user's own ~/.cache.
export PODROLES_CACHE ?= $(if $(filter 0,$(shell id -u)),/var/cache/podroles,$(HOME)/.cache/podroles)
# The versions of the nixes that podroles ran, which the commands keep in
# the user's cache: under make, in the clone's own ignored folder, so that
# the tests' nixes (stand-ins among them) stay out of the user's.
export PODROLES_VERSION_CACHE ?= $(CURDIR)/.cache/nix-versions.json
NIX24_TARBALL ?= $(CURDIR)/../shared/vendor/nix-2.24.15-src.tar.gz
NIX24_DIR     := $(PODROLES_CACHE)/nix-2.24/$(shell sha256sum < scripts/build-nix.sh | cut -c1-16)
NIX24         := $(NIX24_DIR)/own-root/bin/nix
nix24: deps
	@scripts/build-nix.sh $(NIX24_DIR) $(NIX24_TARBALL)
	@scripts/nix-own-root.sh $(NIX24_DIR)

# Nix 2.26 as Debian 13 ships it (nix-bin), and Nix 2.31.5 built from its
# pinned source with Debian 13's packages (BLAKE3's C library first), each in
# a Debian 13 root of its own (scripts/debian13-root.sh, hashed with each
# recipe), never in the machine's Debian 12, and run through the root's own
# loader and libraries.
NIX231_TARBALL ?= $(CURDIR)/../shared/vendor/nix-2.31.5-src.tar.gz
BLAKE3_TARBALL ?= $(CURDIR)/../shared/vendor/blake3-1.8.2-c.tar.gz
NIX226_DIR    := $(PODROLES_CACHE)/nix-2.26/$(shell cat scripts/debian13-root.sh scripts/build-nix-2.26.sh | sha256sum | cut -c1-16)
NIX226        := $(NIX226_DIR)/own-root/bin/nix
NIX231_DIR    := $(PODROLES_CACHE)/nix-2.31/$(shell cat scripts/debian13-root.sh scripts/build-nix-2.31.sh | sha256sum | cut -c1-16)
NIX231        := $(NIX231_DIR)/own-root/bin/nix
nix226: deps
	@scripts/build-nix-2.26.sh $(NIX226_DIR)
	@scripts/nix-own-root.sh $(NIX226_DIR)
nix231: deps
	@scripts/build-nix-2.31.sh $(NIX231_DIR) $(NIX231_TARBALL) $(BLAKE3_TARBALL)
	@scripts/nix-own-root.sh $(NIX231_DIR)

# Both binaries, static: podroles has every command; podroles-check the node
# commands alone (check, facts, rules, plan), what the flake's checks run.
# Beside them, the pause program of the test cluster's real node (a static
# sandbox process, put alone in an image FROM scratch).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/podroles
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(CHECK_BIN) ./cmd/podroles-check
	$(GO) build -trimpath -ldflags '-s -w' -o bin/podroles-pause ./harness/kubenode/pause

# Checks the bundled examples (they pass), then a broken one (it must fail
# with exit 1, naming the units).
demo: deps build
	$(BIN) check examples/mastodon.nix examples/directory.nix examples/mastodon-vm.nix
	@echo
	@$(BIN) check examples/broken/mastodon-renamed.nix; rc=$$?; \
	  if [ $$rc -ne 1 ]; then echo "expected exit 1 from the broken example, got $$rc"; exit 1; fi; \
	  echo "(exit 1: the broken example is refused, as it should be)"

# The scenario runner's walk-through: a local environment with a cluster
# whose real node (containerd and the kubelet, one per machine; as root)
# runs the directory example's pods, every suite on the local inventory and
# on the real pods, and everything stopped again.
ENV_DIR ?= /tmp/podroles-env
env-demo: deps servers images build
	$(BIN) env up --dir $(ENV_DIR) --cluster examples/directory.nix
	$(BIN) scenarios run --disruptive --inventory $(ENV_DIR)/inventory.yaml; rc=$$?; \
	  $(BIN) scenarios run --disruptive --kubeconfig $(ENV_DIR)/cluster/kubeconfig --namespace directory --node directory \
	    --inventory $(ENV_DIR)/cluster-inventory.yaml examples/directory.nix || rc=$$?; \
	  $(BIN) env down --dir $(ENV_DIR); exit $$rc

# Servers built from the Go module proxy at exact versions, each from a
# wrapper module of its own under servers/ (never in podroles' go.mod), into
# an ignored folder that later runs reuse: only the first build pays.
# The folder is named after the hash of the wrapper modules and of this
# Makefile's server recipes, not their files' times: a fresh clone's files
# are all new, and would otherwise rebuild every server.
SERVERS_HASH := $(shell { cat servers/*/go.mod servers/*/go.sum servers/kwok/stages/main.go servers/coredns/main.go; \
  sed -n '/^SERVERS_BIN/,/^vet:/p' Makefile; } | sha256sum | cut -c1-16)
SERVERS_BIN := $(PODROLES_CACHE)/servers/$(SERVERS_HASH)/bin
export PODROLES_SERVERS := $(SERVERS_BIN)
# The pods of the local environment run under bin/podroles' pod supervisor.
export PODROLES_BIN := $(CURDIR)/$(BIN)
AUTHELIA_NOSUMDB := github.com/authelia/authelia,github.com/weppos/publicsuffix-go,github.com/authelia/oauth2-provider

K8S_COMMANDS := kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
K8S_VERSION  := v1.37.2
# Without these the commands report v0.0.0-master, and a node so named.
K8S_LDFLAGS  := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
  -X k8s.io/component-base/version.gitTreeState=clean
servers: $(SERVERS_BIN)/vault $(SERVERS_BIN)/authelia $(SERVERS_BIN)/etcd $(addprefix $(SERVERS_BIN)/,$(K8S_COMMANDS)) \
	$(SERVERS_BIN)/kwok $(SERVERS_BIN)/kwok-stages $(SERVERS_BIN)/coredns

$(SERVERS_BIN)/vault:
	@mkdir -p $(SERVERS_BIN)
	@echo "building Vault v1.21.0 (the OpenBao API): minutes the first time"
	cd servers/vault && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp github.com/hashicorp/vault && mv $@.tmp $@

$(SERVERS_BIN)/authelia:
	@mkdir -p $(SERVERS_BIN)
	cd servers/authelia && GONOSUMDB=$(AUTHELIA_NOSUMDB) $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp github.com/authelia/authelia/v4/cmd/authelia && mv $@.tmp $@

# The test control plane: etcd (Debian's 3.4 does not work with kwok) and
# kube-apiserver from k8s.io/kubernetes, each a wrapper module of its own;
# the kubelet and kube-proxy of the real node from the same module, so no
# version skew.
$(SERVERS_BIN)/etcd:
	@mkdir -p $(SERVERS_BIN)
	cd servers/etcd && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

# All in one go build: run beside the other servers (make -j), separate
# builds would compile the module's shared packages once each.
$(addprefix $(SERVERS_BIN)/,$(K8S_COMMANDS)) &:
	@mkdir -p $(SERVERS_BIN)/.k8s.tmp
	@echo "building $(K8S_COMMANDS) $(K8S_VERSION): minutes the first time"
	cd servers/kubernetes && $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $(SERVERS_BIN)/.k8s.tmp/ $(addprefix k8s.io/kubernetes/cmd/,$(K8S_COMMANDS))
	@for c in $(K8S_COMMANDS); do mv $(SERVERS_BIN)/.k8s.tmp/$$c $(SERVERS_BIN)/$$c; done; rmdir $(SERVERS_BIN)/.k8s.tmp

# KWOK, the kubelet of the fake node, and kwok-stages, which prints kwok's
# own stages for its configuration.
$(SERVERS_BIN)/kwok:
	@mkdir -p $(SERVERS_BIN)
	cd servers/kwok && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp sigs.k8s.io/kwok/cmd/kwok && mv $@.tmp $@

$(SERVERS_BIN)/kwok-stages:
	@mkdir -p $(SERVERS_BIN)
	cd servers/kwok && $(GO) build -o $@.tmp ./stages && mv $@.tmp $@

# CoreDNS, the real node's cluster DNS: its main.go links the plugins the
# node's Corefile uses and no others (no forward: nothing is asked outside).
$(SERVERS_BIN)/coredns:
	@mkdir -p $(SERVERS_BIN)
	cd servers/coredns && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp . && mv $@.tmp $@

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt would change these files"; exit 1; }
	$(GO) vet ./...

# Where the servers are, recorded in the machine-wide cache, so that
# podroles run outside make (env up) finds them as it finds the images
# (harness/servers.Dir). Outside the recipes that SERVERS_HASH covers.
.PHONY: servers-record
servers-record: servers
	@mkdir -p $(PODROLES_CACHE) && printf '{"bin": "%s"}\n' '$(SERVERS_BIN)' > $(PODROLES_CACHE)/servers.json.new && \
	  mv $(PODROLES_CACHE)/servers.json.new $(PODROLES_CACHE)/servers.json

# The containers provider's images, built once per machine and kept in the
# engine's store: a Debian rootfs from debootstrap imported as the base (no
# registry is reached here), and the servers' image from it. On a laptop
# with Docker: make images CONTAINER_CLI=docker IMAGE_BASE=docker.io/library/debian:bookworm-slim
CONTAINER_CLI ?= podman
IMAGE_BASE ?= localhost/podroles-debian:bookworm
export CONTAINERS_CONF ?= $(CURDIR)/harness/images/containers.conf
# Each tagged by what it is built from (Dockerfile, base, server's module),
# so that a change builds anew.
image_tag = $(shell { cat $(1); echo $(IMAGE_BASE); } | sha256sum | cut -c1-12)
ifndef PODROLES_IMAGE_SERVERS
export PODROLES_IMAGE_SERVERS := localhost/podroles-servers:$(call image_tag,harness/images/servers/Dockerfile)
endif
# OpenBao's and Authelia's places: our static builds copied into images laid
# out as the official ones.
ifndef PODROLES_IMAGE_OPENBAO
export PODROLES_IMAGE_OPENBAO := localhost/podroles-openbao:$(call image_tag,harness/images/openbao/Dockerfile servers/vault/go.mod servers/vault/go.sum)
endif
ifndef PODROLES_IMAGE_AUTHELIA
export PODROLES_IMAGE_AUTHELIA := localhost/podroles-authelia:$(call image_tag,harness/images/authelia/Dockerfile servers/authelia/go.mod servers/authelia/go.sum)
endif
# The test cluster's real node: the base of the nodes' stand-in images
# (Debian with systemd), and slapd alone for the lldap role's pods.
ifndef PODROLES_IMAGE_NODE
export PODROLES_IMAGE_NODE := localhost/podroles-node:$(call image_tag,harness/images/node/Dockerfile)
endif
ifndef PODROLES_IMAGE_SLAPD
export PODROLES_IMAGE_SLAPD := localhost/podroles-slapd:$(call image_tag,harness/images/slapd/Dockerfile)
endif
# server_image IMAGE,NAME,BINARY: build harness/images/NAME with BINARY in its
# context, unless the engine has IMAGE.
define server_image
	@$(CONTAINER_CLI) image inspect $(1) >/dev/null 2>&1 || { \
	  rm -rf .cache/images/$(2) && mkdir -p .cache/images/$(2) && \
	  cp harness/images/$(2)/Dockerfile .cache/images/$(2)/ && { ln -f $(3) .cache/images/$(2)/ 2>/dev/null || cp $(3) .cache/images/$(2)/; } && \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(1) .cache/images/$(2) >/dev/null && rm -rf .cache/images/$(2); }
endef
# The images of Debian's packages alone first (no server in them), so that
# make -j downloads them while the servers build.
.PHONY: images-debian
images-debian: deps
	@if ! $(CONTAINER_CLI) image inspect $(IMAGE_BASE) >/dev/null 2>&1 && [ "$(IMAGE_BASE)" = localhost/podroles-debian:bookworm ]; then \
	  echo "debootstrap: $(IMAGE_BASE)"; rm -rf .cache/rootfs; mkdir -p .cache; \
	  $(SUDO) debootstrap --variant=minbase bookworm .cache/rootfs >/dev/null && \
	  $(SUDO) tar -C .cache/rootfs -c . | $(CONTAINER_CLI) import - $(IMAGE_BASE) >/dev/null && $(SUDO) rm -rf .cache/rootfs; \
	fi
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_SERVERS) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_SERVERS) -t localhost/podroles-servers:bookworm harness/images/servers >/dev/null
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_NODE) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_NODE) -t localhost/podroles-node:bookworm harness/images/node >/dev/null
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_SLAPD) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_SLAPD) -t localhost/podroles-slapd:bookworm harness/images/slapd >/dev/null
# The runner's image (scenarios manifest's Job): FROM scratch, the static
# binary and the host's CA bundle, tagged by both, so it is built in the
# recipe, once the binary is.
RUNNER_CA ?= /etc/ssl/certs/ca-certificates.crt
# The record of what it built lets podroles, run outside make, find the
# images whose tags only this Makefile computes (localenv.ImagesRecord).
images: images-debian $(SERVERS_BIN)/vault $(SERVERS_BIN)/authelia servers-record build
	$(call server_image,$(PODROLES_IMAGE_OPENBAO),openbao,$(SERVERS_BIN)/vault)
	$(call server_image,$(PODROLES_IMAGE_AUTHELIA),authelia,$(SERVERS_BIN)/authelia)
	@runner=localhost/podroles-runner:$$(cat harness/images/runner/Dockerfile $(BIN) $(RUNNER_CA) | sha256sum | cut -c1-12); \
	$(CONTAINER_CLI) image inspect $$runner >/dev/null 2>&1 || { \
	  rm -rf .cache/images/runner && mkdir -p .cache/images/runner && \
	  cp harness/images/runner/Dockerfile $(BIN) $(RUNNER_CA) .cache/images/runner/ && \
	  $(CONTAINER_CLI) build -q -t $$runner .cache/images/runner >/dev/null && rm -rf .cache/images/runner; } && \
	mkdir -p $(PODROLES_CACHE) && \
	printf '{"servers": "%s", "openbao": "%s", "authelia": "%s", "node": "%s", "slapd": "%s", "runner": "%s"}\n' '$(PODROLES_IMAGE_SERVERS)' \
	  '$(PODROLES_IMAGE_OPENBAO)' '$(PODROLES_IMAGE_AUTHELIA)' '$(PODROLES_IMAGE_NODE)' '$(PODROLES_IMAGE_SLAPD)' "$$runner" > $(PODROLES_CACHE)/images.json.new && \
	mv $(PODROLES_CACHE)/images.json.new $(PODROLES_CACHE)/images.json

# make test TESTFLAGS="-run TestEnvUp -v" PKGS=./harness/... runs some tests only.
# All of them run on Debian's nix; those of NIX_PKGS (the packages whose
# tests run nix) run again on each nix of TEST_NIXES, in turn
# (TEST_NIXES="2.31" runs only that one, TEST_NIXES= none; TEST_NIX24=no
# leaves 2.24 out). Each run names its nix in PODROLES_TEST_NIX
# (internal/nixtest), with a nix first on PATH that refuses to run, so that
# no test runs another nix unawares. A failing release does not stop the
# next: the target fails at the end, naming them.
# The other nixes' runs skip env up --cluster: its minutes go to the real
# node, which no nix version changes, and its node is read as every other
# env up's. The packages that use the machine's real node take it in turn,
# so the tests' timeout is longer than go test's ten minutes.
PKGS ?= ./...
NIX_PKGS ?= ./nixeval/... ./checks/... ./cmd/... ./flaketest/... ./plan/... ./facts/...
# By default 2.26 and 2.31, which bracket 2.24: building 2.31 beside 2.24
# would take a machine without the cache past CI's 90 minutes
# (docs/testing.md). TEST_NIXES="2.24 2.26 2.31" runs all three.
TEST_NIXES ?= 2.26 2.31
TEST_NIX24 ?= yes
NO_NIX_ON_PATH := $(CURDIR)/scripts/no-nix-on-path
# Each release of TEST_NIXES: the target that makes it, the command the tests run.
NIX_TARGET_2.24 := nix24
NIX_TARGET_2.26 := nix226
NIX_TARGET_2.31 := nix231
NIX_CMD_2.24 := $(NIX24)
NIX_CMD_2.26 := $(NIX226)
NIX_CMD_2.31 := $(NIX231)
TEST_NIXES_RUN := $(filter-out $(if $(filter no,$(TEST_NIX24)),2.24),$(TEST_NIXES))
$(foreach v,$(TEST_NIXES_RUN),$(if $(NIX_TARGET_$(v)),,$(error TEST_NIXES: no nix $(v); the tests run on 2.24, 2.26 and 2.31)))
# What the tests need is made first, three at a time: the servers' builds
# use the cores while the images' Debian packages download. The first run
# (every package on Debian's nix) waits on servers, back-offs and pods
# much of its time, so the other nixes' work goes beside it, in the
# background (other-nixes): first their builds, where the machine-wide
# cache lacks them (about 20 minutes of CPU for 2.31), at the lowest CPU
# and disk priority, then their runs at nice 10, so that neither slows the
# first run's waits into timeouts (docs/testing.md). Their logs are
# .cache/nixes.log and .cache/other-nixes.log; the second is printed when
# both are done. make test stops them if it is stopped or the first run
# fails. The first run's packages get 60 minutes each: the real node is
# one per machine, so ./scenarios waits for it while ./harness/... hold it.
NIX_TARGETS := $(foreach v,$(TEST_NIXES_RUN),$(NIX_TARGET_$(v)))
# The packages that use the machine's real node, in the order they take
# it: go test starts packages in the order it is given them, two at a
# time, so these start first and the node, the run's longest path, is
# never idle. kubenode's tests and harnesscmd's env up --cluster hold it
# for about a minute each, scenarios' TestRealNode for eleven.
NODE_PKGS := ./harness/kubenode ./cmd/internal/harnesscmd ./scenarios
FIRST_PKGS = $(filter $(shell $(GO) list $(PKGS)),$(shell $(GO) list $(NODE_PKGS)))
test: deps
	@$(MAKE) --no-print-directory -j3 --output-sync=target servers images build vet
	@mkdir -p .cache; others=""; \
	  if [ -n "$(TEST_NIXES_RUN)" ]; then \
	    echo "nix $(TEST_NIXES_RUN): built if need be, then the same tests, beside the first run (log: .cache/other-nixes.log)"; \
	    setsid $(MAKE) --no-print-directory other-nixes >.cache/other-nixes.log 2>&1 & others=$$!; \
	    trap 'kill -- -'$$others' 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	  fi; \
	  PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -count=1 -timeout 60m $(TESTFLAGS) $(FIRST_PKGS) $(PKGS) || exit; \
	  if [ -n "$$others" ]; then \
	    echo "waiting for the other nixes' runs"; \
	    wait $$others; rc=$$?; cat .cache/other-nixes.log; \
	    [ $$rc = 0 ] || exit 1; \
	    echo "Debian's nix after the other nixes' runs:"; \
	    PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -count=1 -run '^(TestExtractFlake|TestManyNodesOneProcess)$$' ./nixeval/ || \
	      { echo "make test: failed on nix 2.8 after the other nixes' runs"; exit 1; }; \
	  fi
# other-nixes builds the nixes of TEST_NIXES_RUN, then runs the tests of
# NIX_PKGS on each. A failing release does not stop the next.
.PHONY: other-nixes
other-nixes:
ifneq ($(strip $(TEST_NIXES_RUN)),)
	@nice -n 19 ionice -c 3 $(MAKE) --no-print-directory $(NIX_TARGETS) >.cache/nixes.log 2>&1 || \
	  { tail -n 30 .cache/nixes.log; echo "make test: building nix $(TEST_NIXES_RUN) failed (.cache/nixes.log)"; exit 1; }
	@pkgs="$(filter $(shell $(GO) list $(NIX_PKGS)),$(shell $(GO) list $(PKGS)))"; \
	  if [ -z "$$pkgs" ]; then echo "nix $(TEST_NIXES_RUN): none of these packages runs nix"; exit 0; fi; \
	  failed=""; \
	  for run in $(foreach v,$(TEST_NIXES_RUN),$(v)=$(NIX_CMD_$(v))); do \
	    v=$${run%%=*} nix=$${run#*=}; \
	    echo "the same tests on nix $$v: $$pkgs" | sed 's|github.com/fediversity/podroles/|./|g'; \
	    PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$$nix nice -n 10 $(GO) test -count=1 -timeout 30m -skip '^TestEnvUpWithCluster$$' $(TESTFLAGS) $$pkgs || \
	      failed="$$failed $$v"; \
	  done; \
	  if [ -n "$$failed" ]; then echo "make test: failed on nix$$failed"; exit 1; fi
endif

# The reference pages of docs/ (rules.md, scenarios.md, cli/) and the tests'
# golden files (each command's --help, each format of the reports), written
# anew from the code: the tests that compare them (TestDocs, TestGolden*,
# in the packages whose tests use internal/golden) run with -update. make
# test runs the same tests without it, and fails on any difference.
GOLDEN_PKGS = $(shell $(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... | \
  awk '$$1 !~ /internal\/golden$$/ && / github.com\/fediversity\/podroles\/internal\/golden( |$$)/ { print $$1 }')
docs: deps
	PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -count=1 -run '^(TestDocs|TestGolden.*)$$' $(GOLDEN_PKGS) -update
	@git status --short -- docs '*/testdata/*'

bench: deps servers images build
	PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -run '^$$' -bench . -benchmem ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseDocument -fuzztime $(FUZZTIME) ./facts

clean:
	rm -rf bin
