# scatterd and the scatter CLI in one image, built on Debian bookworm.
#
# No registry is assumed: BASE names a local bookworm image (see
# scripts/container-test.sh, which makes one with debootstrap and
# `podman import`). Build with `podman build --format docker` so the
# HEALTHCHECK is kept (the OCI format drops it).
ARG BASE=localhost/scatter-bookworm:latest

FROM ${BASE} AS build
COPY scripts/packages.txt /tmp/packages.txt
RUN apt-get update \
 && grep -v '^#' /tmp/packages.txt | grep -v -E 'python3|libgtest|libgmock|libbenchmark|curl' \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt CMakePresets.json ./
COPY sampler sampler
COPY proto proto
COPY server server
COPY client client
COPY demo demo
RUN cmake --preset release -DSCATTER_BUILD_TESTS=OFF -DSCATTER_BUILD_BENCHMARKS=OFF \
      -DSCATTER_WERROR=OFF >/dev/null \
 && cmake --build build/release --target scatterd scatter \
 && strip build/release/server/scatterd build/release/client/scatter

FROM ${BASE}
# Only the shared libraries the two binaries load (ldd, mapped to packages).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libabsl20220623 libc-ares2 libcivetweb1 libfmt9 libgrpc++1.51 libgrpc29 \
      libpng16-16 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      libprotobuf32 libre2-9 libspdlog1.10 libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin scatter
COPY --from=build /src/build/release/server/scatterd /src/build/release/client/scatter \
     /usr/local/bin/
USER 10001
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["scatter", "health", "--server=127.0.0.1:50051", "--timeout=2s"]
# Inside a container, listen on every interface; the grace period stays
# under Kubernetes' default 30 s termination grace.
ENTRYPOINT ["scatterd", "--address=0.0.0.0:50051", "--metrics_address=0.0.0.0:9464", \
            "--grace_period=20s"]
