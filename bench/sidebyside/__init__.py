"""The side-by-side benchmark of Shale and Apache Kafka, run by bench/bench.py."""
