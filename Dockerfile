# The relay's container image (docs/operations.md, "In a container").
#
#   docker build -t weft-relay .
#   docker run -d --name weft-relay -p 4001:4001/tcp -p 4001:4001/udp \
#     -v weft-relay:/data weft-relay
#
# A static binary (cgo off) on an empty base: no shell, no package manager,
# nothing to patch but weft. It runs as an unprivileged user (65532) with
# its home, the relay's key and every replica, in the volume /data. .ci/run
# builds it where a container daemon is reachable and says so otherwise.

FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# make build stamps the same variables; a plain docker build says dev.
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
        -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE} -X main.modified=false" \
        -o /out/weft ./cmd/weft \
    && mkdir -p /out/data

FROM scratch
COPY --from=build /out/weft /weft
# The volume's mount point, owned by the user the relay runs as, so a new
# named volume starts with that owner.
COPY --from=build --chown=65532:65532 /out/data /data
ENV WEFT_RELAY_HOME=/data
USER 65532:65532
VOLUME ["/data"]
# libp2p, TCP and QUIC (relay.DefaultListenAddrs). The metrics port is not
# opened by default: --metrics serves Prometheus /metrics, pprof and POST
# /admin/scrub without authentication, so give it (e.g. --metrics
# 0.0.0.0:9100, then -p 127.0.0.1:9100:9100) only where nobody else can
# reach it.
EXPOSE 4001/tcp 4001/udp
ENTRYPOINT ["/weft", "relay"]
