# The App's image: `mini-fix serve` by default (override the command with `mini-fix worker` for worker pods).
# Built from a wheelhouse made on the host, so the build itself needs no network:
#   scripts/build-app-image.sh            (here: FROM the offline base mini-fix-base:bookworm)
#   scripts/build-app-image.sh python:3.11-slim   (a registry image, in production)
# Any base with Python >= 3.11 works; pip is not needed in it (pip runs from its own wheel).
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
COPY build/wheelhouse /wheels
RUN set -eux; \
    pip_wheel="$(ls /wheels/pip-*.whl | head -n1)"; \
    python3 "$pip_wheel/pip" install --no-index --find-links /wheels --no-compile --no-warn-script-location \
        --target /opt/mini-fix/site-packages "mini-fix[postgres]"; \
    rm -rf /opt/mini-fix/site-packages/*.dist-info/RECORD

FROM ${BASE_IMAGE}
RUN set -eux; \
    (getent group mini-fix || groupadd --system --gid 10001 mini-fix); \
    (getent passwd mini-fix || useradd --system --uid 10001 --gid mini-fix --home-dir /var/lib/mini-fix \
        --create-home --shell /usr/sbin/nologin mini-fix)
COPY --from=build /opt/mini-fix /opt/mini-fix
# bot/render.py and bot/agent/config.py read the templates next to the packages.
COPY prompts /opt/mini-fix/site-packages/prompts
ENV PYTHONPATH=/opt/mini-fix/site-packages \
    PATH=/opt/mini-fix/site-packages/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    MINIFIX_DATA_DIR=/var/lib/mini-fix \
    MINIFIX_LOG_FORMAT=json
USER mini-fix
WORKDIR /opt/mini-fix
VOLUME /var/lib/mini-fix
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s CMD python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:3000/healthz', timeout=4)"
ENTRYPOINT ["mini-fix"]
CMD ["serve", "--host", "0.0.0.0", "--port", "3000"]
