"""loop"""
