"""The dataset: frozen records, loading an annotation tree, images, the hub, validation and
dataset summaries. Imports nothing above `geometry` and `errors`."""
