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

.PHONY: all deps build demo test docs bench fuzz vet clean env-demo servers images nix24

all: build

# What the tests run, from Debian: nix 2.8 for podroles check; slapd, haproxy,
# PostgreSQL and nginx for the local environment of the scenario suites;
# podman and debootstrap for its containers provider; containerd, runc and
# the CNI plugins for the real node of the test cluster.
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
	  test -x /usr/lib/cni/bridge || missing="$$missing containernetworking-plugins"; \
	  command -v runc >/dev/null || missing="$$missing runc"; \
	  if [ -n "$$missing" ]; then \
	    echo "installing from Debian:$$missing"; \
	    $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  fi
	@$(DEBIAN_NIX) --version

# The two nixes the tests run on (docs/nix-versions.md): Debian 12's nix-bin
# 2.8, and Nix 2.24.15 built once from its pinned source (scripts/build-nix.sh)
# into a folder named after the recipe's hash, so that a changed recipe builds
# anew and an unchanged one is reused. The source is found beside the
# repository, where every developer machine and CI have it. The tests run it
# with a /nix of its own in a mount namespace (scripts/nix-own-root.sh).
DEBIAN_NIX    := /usr/bin/nix
NIX24_TARBALL ?= $(CURDIR)/../shared/vendor/nix-2.24.15-src.tar.gz
NIX24_DIR     := $(CURDIR)/.cache/nix-2.24/$(shell sha256sum < scripts/build-nix.sh | cut -c1-16)
NIX24         := $(NIX24_DIR)/own-root/bin/nix
nix24:
	@scripts/build-nix.sh $(NIX24_DIR) $(NIX24_TARBALL)
	@scripts/nix-own-root.sh $(NIX24_DIR)

# Both binaries, static: podroles has every command; podroles-check the node
# commands alone (check, facts, rules, plan), what the flake's checks run.
# Beside them, the pause program of the test cluster's real node (a static
# sandbox process, put alone in an image FROM scratch).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/podroles
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(CHECK_BIN) ./cmd/podroles-check
	$(GO) build -trimpath -ldflags '-s -w' -o bin/podroles-pause ./vmtests/kubenode/pause

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
	$(BIN) scenarios run --inventory $(ENV_DIR)/inventory.yaml; rc=$$?; \
	  $(BIN) scenarios run --kubeconfig $(ENV_DIR)/cluster/kubeconfig --namespace directory --node directory \
	    --inventory $(ENV_DIR)/cluster-inventory.yaml examples/directory.nix || rc=$$?; \
	  $(BIN) env down --dir $(ENV_DIR); exit $$rc

# Servers built from the Go module proxy at exact versions, each from a
# wrapper module of its own under servers/ (never in podroles' go.mod), into
# an ignored folder that later runs reuse: only the first build pays.
SERVERS_BIN := $(CURDIR)/.cache/servers/bin
export PODROLES_SERVERS := $(SERVERS_BIN)
# The pods of the local environment run under bin/podroles' pod supervisor.
export PODROLES_BIN := $(CURDIR)/$(BIN)
AUTHELIA_NOSUMDB := github.com/authelia/authelia,github.com/weppos/publicsuffix-go,github.com/authelia/oauth2-provider

K8S_COMMANDS := kube-apiserver kube-controller-manager kube-scheduler kubelet
K8S_VERSION  := v1.37.2
# Without these the commands report v0.0.0-master, and a node so named.
K8S_LDFLAGS  := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
  -X k8s.io/component-base/version.gitTreeState=clean
servers: $(SERVERS_BIN)/vault $(SERVERS_BIN)/authelia $(SERVERS_BIN)/etcd $(addprefix $(SERVERS_BIN)/,$(K8S_COMMANDS)) \
	$(SERVERS_BIN)/kwok $(SERVERS_BIN)/kwok-stages

$(SERVERS_BIN)/vault: servers/vault/go.mod servers/vault/go.sum
	@mkdir -p $(SERVERS_BIN)
	@echo "building Vault v1.21.0 (the OpenBao API): minutes the first time"
	cd servers/vault && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp github.com/hashicorp/vault && mv $@.tmp $@

$(SERVERS_BIN)/authelia: servers/authelia/go.mod servers/authelia/go.sum
	@mkdir -p $(SERVERS_BIN)
	cd servers/authelia && GONOSUMDB=$(AUTHELIA_NOSUMDB) $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp github.com/authelia/authelia/v4/cmd/authelia && mv $@.tmp $@

# The test control plane: etcd (Debian's 3.4 does not work with kwok) and
# kube-apiserver from k8s.io/kubernetes, each a wrapper module of its own;
# the kubelet of the real node from the same module, so no version skew.
$(SERVERS_BIN)/etcd: servers/etcd/go.mod servers/etcd/go.sum
	@mkdir -p $(SERVERS_BIN)
	cd servers/etcd && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

$(addprefix $(SERVERS_BIN)/,$(K8S_COMMANDS)): $(SERVERS_BIN)/%: servers/kubernetes/go.mod servers/kubernetes/go.sum
	@mkdir -p $(SERVERS_BIN)
	@echo "building $* $(K8S_VERSION): minutes the first time"
	cd servers/kubernetes && $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $@.tmp k8s.io/kubernetes/cmd/$* && mv $@.tmp $@

# KWOK, the kubelet of the fake node, and kwok-stages, which prints kwok's
# own stages for its configuration.
$(SERVERS_BIN)/kwok: servers/kwok/go.mod servers/kwok/go.sum
	@mkdir -p $(SERVERS_BIN)
	cd servers/kwok && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp sigs.k8s.io/kwok/cmd/kwok && mv $@.tmp $@

$(SERVERS_BIN)/kwok-stages: servers/kwok/go.mod servers/kwok/go.sum servers/kwok/stages/main.go
	@mkdir -p $(SERVERS_BIN)
	cd servers/kwok && $(GO) build -o $@.tmp ./stages && mv $@.tmp $@

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt would change these files"; exit 1; }
	$(GO) vet ./...

# The containers provider's images, built once per machine and kept in the
# engine's store: a Debian rootfs from debootstrap imported as the base (no
# registry is reached here), and the servers' image from it. On a laptop
# with Docker: make images CONTAINER_CLI=docker IMAGE_BASE=docker.io/library/debian:bookworm-slim
CONTAINER_CLI ?= podman
IMAGE_BASE ?= localhost/podroles-debian:bookworm
export CONTAINERS_CONF ?= $(CURDIR)/vmtests/images/containers.conf
# Each tagged by what it is built from (Dockerfile, base, server's module),
# so that a change builds anew.
image_tag = $(shell { cat $(1); echo $(IMAGE_BASE); } | sha256sum | cut -c1-12)
ifndef PODROLES_IMAGE_SERVERS
export PODROLES_IMAGE_SERVERS := localhost/podroles-servers:$(call image_tag,vmtests/images/servers/Dockerfile)
endif
# OpenBao's and Authelia's places: our static builds copied into images laid
# out as the official ones.
ifndef PODROLES_IMAGE_OPENBAO
export PODROLES_IMAGE_OPENBAO := localhost/podroles-openbao:$(call image_tag,vmtests/images/openbao/Dockerfile servers/vault/go.mod servers/vault/go.sum)
endif
ifndef PODROLES_IMAGE_AUTHELIA
export PODROLES_IMAGE_AUTHELIA := localhost/podroles-authelia:$(call image_tag,vmtests/images/authelia/Dockerfile servers/authelia/go.mod servers/authelia/go.sum)
endif
# The test cluster's real node: the base of the nodes' stand-in images
# (Debian with systemd), and slapd alone for the lldap role's pods.
ifndef PODROLES_IMAGE_NODE
export PODROLES_IMAGE_NODE := localhost/podroles-node:$(call image_tag,vmtests/images/node/Dockerfile)
endif
ifndef PODROLES_IMAGE_SLAPD
export PODROLES_IMAGE_SLAPD := localhost/podroles-slapd:$(call image_tag,vmtests/images/slapd/Dockerfile)
endif
# server_image IMAGE,NAME,BINARY: build vmtests/images/NAME with BINARY in its
# context, unless the engine has IMAGE.
define server_image
	@$(CONTAINER_CLI) image inspect $(1) >/dev/null 2>&1 || { \
	  rm -rf .cache/images/$(2) && mkdir -p .cache/images/$(2) && \
	  cp vmtests/images/$(2)/Dockerfile .cache/images/$(2)/ && { ln -f $(3) .cache/images/$(2)/ 2>/dev/null || cp $(3) .cache/images/$(2)/; } && \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(1) .cache/images/$(2) >/dev/null && rm -rf .cache/images/$(2); }
endef
images: deps $(SERVERS_BIN)/vault $(SERVERS_BIN)/authelia
	@if ! $(CONTAINER_CLI) image inspect $(IMAGE_BASE) >/dev/null 2>&1 && [ "$(IMAGE_BASE)" = localhost/podroles-debian:bookworm ]; then \
	  echo "debootstrap: $(IMAGE_BASE)"; rm -rf .cache/rootfs; \
	  $(SUDO) debootstrap --variant=minbase bookworm .cache/rootfs >/dev/null && \
	  $(SUDO) tar -C .cache/rootfs -c . | $(CONTAINER_CLI) import - $(IMAGE_BASE) >/dev/null && $(SUDO) rm -rf .cache/rootfs; \
	fi
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_SERVERS) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_SERVERS) -t localhost/podroles-servers:bookworm vmtests/images/servers >/dev/null
	$(call server_image,$(PODROLES_IMAGE_OPENBAO),openbao,$(SERVERS_BIN)/vault)
	$(call server_image,$(PODROLES_IMAGE_AUTHELIA),authelia,$(SERVERS_BIN)/authelia)
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_NODE) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_NODE) -t localhost/podroles-node:bookworm vmtests/images/node >/dev/null
	@$(CONTAINER_CLI) image inspect $(PODROLES_IMAGE_SLAPD) >/dev/null 2>&1 || \
	  $(CONTAINER_CLI) build -q --build-arg BASE=$(IMAGE_BASE) -t $(PODROLES_IMAGE_SLAPD) -t localhost/podroles-slapd:bookworm vmtests/images/slapd >/dev/null

# make test TESTFLAGS="-run TestEnvUp -v" PKGS=./vmtests/... runs some tests only.
# All of them run on Debian's nix; those of NIX_PKGS (the packages whose
# tests run nix) run again on Nix 2.24 (TEST_NIX24=no skips that run). Each
# run names its nix in PODROLES_TEST_NIX (internal/nixtest), with a nix first
# on PATH that refuses to run, so that no test runs another nix unawares.
# The 2.24 run skips env up --cluster: its minutes go to the real node, which
# no nix version changes, and its node is read as every other env up's.
# The packages that use the machine's real node take it in turn, so the
# tests' timeout is longer than go test's ten minutes.
PKGS ?= ./...
NIX_PKGS ?= ./nixeval/... ./checks/... ./cmd/... ./flaketest/... ./plan/... ./facts/...
TEST_NIX24 ?= yes
NO_NIX_ON_PATH := $(CURDIR)/scripts/no-nix-on-path
test: deps $(if $(filter yes,$(TEST_NIX24)),nix24) servers images build vet
	PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -count=1 -timeout 30m $(TESTFLAGS) $(PKGS)
ifeq ($(TEST_NIX24),yes)
	@pkgs="$(filter $(shell $(GO) list $(NIX_PKGS)),$(shell $(GO) list $(PKGS)))"; \
	  if [ -z "$$pkgs" ]; then echo "nix 2.24: none of these packages runs nix"; exit 0; fi; \
	  echo "the same tests on nix 2.24: $$pkgs" | sed 's|github.com/fediversity/podroles/|./|g'; \
	  PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(NIX24) $(GO) test -count=1 -timeout 30m -skip '^TestEnvUpWithCluster$$' $(TESTFLAGS) $$pkgs && \
	  echo "Debian's nix after the 2.24 run:" && \
	  PATH=$(NO_NIX_ON_PATH):$$PATH PODROLES_TEST_NIX=$(DEBIAN_NIX) $(GO) test -count=1 -run '^(TestExtractFlake|TestManyNodesOneProcess)$$' ./nixeval/
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
