# The image of serve-load and offline for runs on Kubernetes or any
# container host (docs/DISTRIBUTED.md). Static binaries (no cgo) on a
# distroless base, run as a non-root user.
#
#   docker build -t ghcr.io/inferbench/inferbench:latest .
#
# examples/serve-load's deploy_test.go checks this file: the Go version
# against go.mod, every package it builds, and the entrypoint.

FROM golang:1.27 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/ ./examples/serve-load ./examples/offline

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/serve-load /usr/local/bin/serve-load
COPY --from=build /out/offline /usr/local/bin/offline
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/serve-load"]
