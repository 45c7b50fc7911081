"""tpr-keras: Tensor Product Representation models for TensorFlow 2 / Keras 3."""

from setuptools import find_packages, setup

setup(
    name="tpr-keras",
    version="0.1.0",
    description=(
        "TPR-RNN, TP-Transformer, TPRU and MemN2N in Keras 3 on TensorFlow 2, "
        "with tf.distribute training and TF Serving-compatible exports."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tpr_keras*", "train*", "serving*"]),
    # The trained presets (tpr_keras/presets/<name>/): config, weights, vocabulary, metadata.
    package_data={"tpr_keras.presets": ["*/*.json", "*/*.h5", "*/assets/*"]},
    # The stack verified to work together (see docs/architecture.md, "Dependencies").
    install_requires=[
        "tensorflow==2.21.*",
        "keras==3.15.*",
        "tensorflow-serving-api==2.21.*",
        "tensorboard==2.21.*",
        "absl-py>=2.1",
        "numpy>=2,<3",
        "grpcio>=1.60",
        "grpcio-health-checking>=1.60",
        "prometheus_client>=0.20",
        "protobuf>=5",
    ],
    extras_require={
        # pytest-xdist: the test command runs the suite on every core (-n auto)
        "test": ["pytest>=8", "pytest-xdist>=3.5"],
        # the papers' figures (tpr_keras.analysis): plots and hierarchical clustering
        "analysis": ["matplotlib>=3.8", "scipy>=1.11"],
        # Keras' JAX backend on the CPU, for the tests that run a model there
        "jax": ["jax[cpu]>=0.6"],
    },
    license="Apache-2.0",
)
