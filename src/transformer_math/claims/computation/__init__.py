"""Claims of 000 §8.3.5 and the third seed's chapter 10: what a Transformer can compute.

Sources (FACTS.md "Computation"): Perez, Barcelo & Marinkovic (JMLR 2021); Merrill & Sabharwal
(TACL 2023); Chen, Li, Liang, Long, Shi, Song, Zhang (EMNLP 2025, arXiv 2411.07602); Hahn
(TACL 2020); Chiang & Cholak (ACL 2022). Modules: ``sensitivity`` (Hahn's O(1/n)),
``parity_margin`` (Chiang & Cholak's 1/(n+1); Hahn bounds confidence, not accuracy),
``scratchpad`` (PARITY trained with and without a scratchpad), ``circuits`` (cited precision
results, the seeds' citation errors, and the circuit-class audit), ``dyck`` (Dyck-1 at constant
depth), ``sorting`` (sorting and counting in TC^0), ``rope_circuit`` (004's rope_circuit).
"""
