# One image for every mnemonet node; the capabilities come from the command (see docker-compose.yml).
# The package is built as a wheel in its own stage and installed from it (prompts and data files are
# inside), never as an editable checkout. The `embedded` extra (FalkorDB and PostgreSQL servers) is not
# installed: nodes here use the neo4j and postgres services.
FROM python:3.11-slim AS wheel
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
COPY prompts ./prompts
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/mnemonet \
    PATH=/opt/mnemonet/bin:$PATH

# Everything below is installed by the unprivileged user, into a venv it owns.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin mnemonet \
    && python -m venv /opt/mnemonet && chown -R mnemonet:mnemonet /opt/mnemonet
USER mnemonet
WORKDIR /home/mnemonet

# Dependencies first, from pyproject.toml alone, so a source change does not reinstall them.
COPY pyproject.toml /tmp/mnemonet/pyproject.toml
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/tmp/mnemonet/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/mnemonet/requirements.txt \
    && pip install -r /tmp/mnemonet/requirements.txt
# Then the package, from its wheel.
COPY --from=wheel /wheels /tmp/mnemonet/wheels
RUN pip install --no-deps /tmp/mnemonet/wheels/*.whl
COPY run_node.py ./
COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/mnemonet-entrypoint

ENV MNEMONET_HOST=0.0.0.0 \
    MNEMONET_PORT=9000 \
    MNEMONET_DATA_DIR=/home/mnemonet/data
EXPOSE 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"MNEMONET_PORT\", \"9000\")}/health', timeout=2)"
ENTRYPOINT ["mnemonet-entrypoint"]
CMD ["python", "run_node.py", "--capabilities", "store,llm,embed"]
