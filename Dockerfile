# One image for every mnemonet node; the capabilities come from the command (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin mnemonet
WORKDIR /app

# Dependencies first, so a source change does not reinstall them.
COPY pyproject.toml README.md ./
COPY src ./src
COPY prompts ./prompts
COPY run_node.py ./
# Editable: prompt templates are read from /app/prompts beside the source tree.
RUN pip install -e .
COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/mnemonet-entrypoint

USER mnemonet
ENV MNEMONET_HOST=0.0.0.0 \
    MNEMONET_PORT=9000 \
    MNEMONET_DATA_DIR=/home/mnemonet/data
EXPOSE 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"MNEMONET_PORT\", \"9000\")}/health', timeout=2)"
ENTRYPOINT ["mnemonet-entrypoint"]
CMD ["python", "run_node.py", "--capabilities", "store,llm,embed"]
