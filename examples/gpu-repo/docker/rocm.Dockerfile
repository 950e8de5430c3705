# Test image for the MI350 stages. Tagged per commit by the prepare-rocm-image job.
FROM rocm/pytorch:rocm7.0_ubuntu24.04_py3.12_pytorch_release_2.8.0
WORKDIR /workspace
COPY pyproject.toml ./
COPY minirl ./minirl
RUN pip install --no-cache-dir -e . ci-policy==0.1.0
