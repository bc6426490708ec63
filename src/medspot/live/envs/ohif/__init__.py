"""envs/ohif"""
