"""The bar: both sides of one retriever's comparison under each exam, and the rule by which questions leave it."""
