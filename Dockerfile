# The App's image: `mini-fix serve` by default (override the command with `mini-fix worker` for worker pods).
# Built from a wheelhouse made on the host, so the build itself needs no network:
#   scripts/build-app-image.sh            (here: FROM the offline base mini-fix-base:bookworm; sandbox base trixie)
#   scripts/build-app-image.sh python:3.11-slim   (a registry image, in production)
# Any Debian-based image with Python >= 3.11 works; pip is not needed in it (pip runs from its own wheel).
# A worker needs git (it clones and diffs on the host side) and a CA bundle (HTTPS to GitHub); a base that lacks
# them gets them from apt, the only step that may use the network (the offline base already has both).
# It talks to the Docker engine through DOCKER_HOST or the mounted socket (add the socket's group to the container).
ARG BASE_IMAGE=python:3.11-slim
# The sandbox image's base (default: the App's own). scripts/build-app-image.sh passes mini-fix-base:trixie, whose
# toolchains current projects need (docs/languages.md); with a registry base, e.g. debian:trixie-slim.
ARG SANDBOX_BASE_IMAGE=${BASE_IMAGE}

# The sandbox image's offline base: SANDBOX_BASE_IMAGE's root filesystem as a tarball, which a worker imports into an
# empty engine (a Kubernetes DinD sidecar) as MINIFIX_SANDBOX_BASE_IMAGE to build the sandbox image there with no
# registry. WITH_SANDBOX_BASE=0 leaves it out (an empty file) for hosts that pull or pre-load the sandbox image.
FROM ${SANDBOX_BASE_IMAGE} AS sandbox-base
ARG WITH_SANDBOX_BASE=1
# tar exits 1 for "file changed as we read it" (the tarball itself grows under /): only a higher code is an error.
RUN set -eu; \
    if [ "$WITH_SANDBOX_BASE" = 1 ]; then \
        rc=0; tar -C / -czf /tmp/sandbox-base.tar.gz --warning=no-file-changed --one-file-system --exclude='./tmp/*' --exclude='./proc/*' --exclude='./sys/*' \
            --exclude='./dev/*' --exclude=./etc/hostname --exclude=./etc/hosts --exclude=./etc/resolv.conf . || rc=$?; \
        [ "$rc" -le 1 ]; \
    else : >/tmp/sandbox-base.tar.gz; fi

FROM ${BASE_IMAGE} AS build
COPY build/wheelhouse /wheels
# The byte-compiling import below loads litellm, which would otherwise try to download its price list.
ENV LITELLM_LOCAL_MODEL_COST_MAP=True
RUN set -eux; \
    pip_wheel="$(ls /wheels/pip-*.whl | head -n1)"; \
    python3 "$pip_wheel/pip" install --no-index --find-links /wheels --no-compile --no-warn-script-location \
        --target /opt/mini-fix/site-packages "mini-fix[postgres]"; \
    cd /opt/mini-fix/site-packages; \
    rm -rf ./*.dist-info/RECORD litellm/proxy/_experimental/out; \
    find . -depth -type d -name tests -path '*/site-packages/*/tests' -exec rm -rf {} +; \
    # Byte-compile only what a process imports at start (a full compileall adds ~170 MB): a cold start drops
    # from ~19 s to a few seconds, and the non-root user could not write these files at run time.
    PYTHONPATH=/opt/mini-fix/site-packages python3 -c "import importlib, pkgutil, bot, sandbox, litellm, psycopg; \
        [importlib.import_module(m.name) for p in (bot, sandbox) for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.') \
         if not m.name.endswith('__main__')]"

FROM ${BASE_IMAGE}
ARG SANDBOX_BASE_IMAGE
RUN set -eux; \
    if ! command -v git >/dev/null || [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git ca-certificates; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/*; \
    (getent group mini-fix || groupadd --system --gid 10001 mini-fix); \
    (getent passwd mini-fix || useradd --system --uid 10001 --gid mini-fix --home-dir /var/lib/mini-fix \
        --create-home --shell /usr/sbin/nologin mini-fix)
COPY --from=build /opt/mini-fix /opt/mini-fix
COPY --from=sandbox-base /tmp/sandbox-base.tar.gz /opt/mini-fix/sandbox-base.tar.gz
# bot/render.py and bot/agent/config.py read the templates next to the packages.
COPY prompts /opt/mini-fix/site-packages/prompts
ENV PYTHONPATH=/opt/mini-fix/site-packages \
    PATH=/opt/mini-fix/site-packages/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    MINIFIX_DATA_DIR=/var/lib/mini-fix \
    MINIFIX_SANDBOX_BASE_ROOTFS=/opt/mini-fix/sandbox-base.tar.gz \
    MINIFIX_SANDBOX_BASE_IMAGE=${SANDBOX_BASE_IMAGE} \
    MINIFIX_LOG_FORMAT=json
USER mini-fix
WORKDIR /opt/mini-fix
VOLUME /var/lib/mini-fix
EXPOSE 3000
# Per role: serve's --port, a worker's --metrics-port (read from the container's command); ready = ledger, queue,
# and for a worker its Docker engine and sandbox image (built on first start: give it time).
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s CMD ["python3", "-m", "bot.healthcheck", "/readyz"]
ENTRYPOINT ["mini-fix"]
CMD ["serve", "--host", "0.0.0.0", "--port", "3000"]
