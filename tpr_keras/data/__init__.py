"""Dataset readers: files -> samples -> tf.data (never imported by layers)."""
