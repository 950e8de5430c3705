# Test image for the H200 stages. Tagged per commit by the prepare-cuda-image job.
FROM nvcr.io/nvidia/pytorch:25.10-py3
WORKDIR /workspace
COPY pyproject.toml ./
COPY minirl ./minirl
RUN pip install --no-cache-dir -e . ci-policy==0.1.0
