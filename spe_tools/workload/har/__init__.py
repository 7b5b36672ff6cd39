"""HAR files: the format read and written, the HAR origin's index and replies, the recorder, the replay."""
