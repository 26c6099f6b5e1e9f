# The image deploy/router.yaml runs: sglang-router (the SGLang Model
# Gateway) from PyPI, the version the tests use.
#   docker build -f deploy/router.Dockerfile -t sglang-router:0.3.2 deploy
FROM python:3.11-slim
RUN pip install --no-cache-dir sglang-router==0.3.2
EXPOSE 30000 29000
CMD ["python3", "-m", "sglang_router.launch_router", "--help"]
