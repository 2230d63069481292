"""Claims of 004 ch. 11: critical attention scaling (Chen, Lin, Polyanskiy, Rigollet 2025).

Module: ``critical_scaling`` (the transition of the self-weight at gamma_c = 1/(1 - rho); the
third seed's polylog divisor refuted).
"""
