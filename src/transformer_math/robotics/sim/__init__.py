"""The community's simulators (gym-pusht, gym-aloha) with LeRobot's observation conventions.

:mod:`.community`: the environments, LeRobot's observation keys and image conversion, each
benchmark's success metric and the episode loop with a Wilson interval. :mod:`.aloha_scripted`:
the scripted end-effector expert of ALOHA transfer-cube (ACT paper) replayed in joint space.
Both packages are the optional extra ``[sim]``; nothing here imports them at module import.
"""
