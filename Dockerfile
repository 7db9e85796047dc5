# SPDX-License-Identifier: MIT
# kcr-operator's image: the fully static binary on an empty (scratch) base.
#
# Stage 1 builds with the same script as everything else
# (scripts/build-static.sh: libcurl from Debian's source package with HTTP/1.1,
# HTTP/2, OpenSSL, zlib and c-ares; static jansson, libyaml, libuv, OpenSSL).
# Stage 2 holds only the binary, a passwd entry for the non-root user and
# /etc/hosts-free name resolution through c-ares (reads /etc/resolv.conf, which
# the kubelet mounts). In-cluster the API server is reached through
# KUBERNETES_SERVICE_HOST/PORT and the mounted service-account token and CA.
#
#   docker build -t kcr-operator:latest .
#   make deploy IMG=kcr-operator:latest
#
# Without a container engine, `make image` (scripts/build-image.sh) builds the
# same image: the build stage's /out comes from the same two scripts run on
# the host, and tools/kcr-image carries out the final stage's COPY, USER and
# ENTRYPOINT into an OCI layout and a `docker load` tarball. Keep the final
# stage to those instructions.
ARG DEBIAN_RELEASE=bookworm

FROM debian:${DEBIAN_RELEASE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config dpkg-dev file git ca-certificates \
      libssl-dev zlib1g-dev libjansson-dev libyaml-dev libuv1-dev libc-ares-dev \
      libnghttp2-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The libcurl build depends only on the scripts: keep it in its own cached layer.
COPY scripts/static/ scripts/static/
# scripts/static/libcurl.sh builds it into /root/.cache/kcr/static/<version>,
# where build-static.sh finds it.
RUN bash scripts/static/libcurl.sh
COPY . .
ARG VERSION=""
RUN KCR_OPERATOR_VERSION="${VERSION}" bash scripts/build-static.sh /out \
 && bash scripts/static/image-files.sh /out

FROM scratch
COPY --from=build /out/kcr-operator /kcr-operator
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
USER 65532:65532
ENTRYPOINT ["/kcr-operator"]
