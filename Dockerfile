# The loadlab image: built in Rust's image, run from a distroless one that holds only glibc,
# CA certificates and a non-root user (no shell, no package manager): about 20 MB.
#
#   docker build -t registry.example/loadlab:1 .
#
# docs/KUBERNETES.md runs it as the pods of `loadlab k8s job`.

FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked --bin loadlab \
    && strip -o /loadlab target/dist/loadlab

# glibc, libgcc_s and libm are all the binary links (rustls: no OpenSSL).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /loadlab /usr/local/bin/loadlab
USER nonroot:nonroot
ENTRYPOINT ["loadlab"]
CMD ["--help"]
