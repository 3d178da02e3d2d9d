"""openai"""
