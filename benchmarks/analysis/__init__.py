"""Analysis of run ledgers with PySpark: the jobs (`metrics`), their input contracts
(`schemas`), the readers at the I/O edge (`inputs`) and the Spark session (`session`)."""
