"""envs/dicomscope"""
