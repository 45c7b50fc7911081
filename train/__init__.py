"""Command-line entry points: flags -> data -> model -> training loop -> evaluation -> export."""
